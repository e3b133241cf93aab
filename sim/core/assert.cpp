#include "core/assert.hpp"

#include <fmt/format.h>

namespace podsim::core {

InternalError::InternalError(std::string_view message, const char* file, int line)
    : std::logic_error(
          fmt::format("internal error (a bug, please report it): {} at {}:{}", message, file, line)) {}

void panic(std::string_view message, const char* file, int line) {
    throw InternalError(message, file, line);
}

}  // namespace podsim::core
