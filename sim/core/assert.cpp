#include "core/assert.hpp"

#include <cstdio>
#include <cstdlib>
#include <string>

namespace podsim::core {

void panic(std::string_view message, const char* file, int line) {
    std::fprintf(stderr, "podsim: internal error (a bug, please report it): %s at %s:%d\n",
                 std::string(message).c_str(), file, line);
    std::abort();
}

}  // namespace podsim::core
