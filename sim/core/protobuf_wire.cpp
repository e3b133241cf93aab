#include "core/protobuf_wire.hpp"

#include <fmt/format.h>

#include "core/diagnostics.hpp"

namespace podsim::core {

void wire_error(const std::string& path, std::size_t offset, const std::string& message) {
    Diagnostics d;
    // Binary files are not line-oriented: the byte offset says where the problem is.
    d.error({path, 0, 0}, "", offset > 0 ? fmt::format("at byte {}: {}", offset, message) : message);
    throw UserError(d);
}

}  // namespace podsim::core
