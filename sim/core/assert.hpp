#pragma once

#include <string_view>

namespace podsim::core {

// Our own bugs (broken invariants) end the process with a message, as gem5's panic() does.
// User mistakes never come here: they are Diagnostics (see diagnostics.hpp).
[[noreturn]] void panic(std::string_view message, const char* file, int line);

}  // namespace podsim::core

#define PODSIM_ASSERT(cond, msg)                                       \
    do {                                                               \
        if (!(cond)) ::podsim::core::panic((msg), __FILE__, __LINE__); \
    } while (false)
