#pragma once

#include <stdexcept>
#include <string>
#include <string_view>

namespace podsim::core {

// A broken invariant: a bug in podsim, never a user mistake (those are UserError, see
// diagnostics.hpp). Thrown rather than aborting, so that a program embedding podsim survives it;
// the CLI prints it as an internal error.
class InternalError : public std::logic_error {
  public:
    InternalError(std::string_view message, const char* file, int line);
};

// Throws InternalError naming the source location, as gem5's panic() reports one.
[[noreturn]] void panic(std::string_view message, const char* file, int line);

}  // namespace podsim::core

#define PODSIM_ASSERT(cond, msg)                                       \
    do {                                                               \
        if (!(cond)) ::podsim::core::panic((msg), __FILE__, __LINE__); \
    } while (false)
