#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/time.hpp"

namespace podsim::scheduler {

// When one op of the program ran, on which resource.
struct Span {
    int op = 0;
    int resource = 0;
    core::Time start = 0;
    core::Time end = 0;
};

struct Timeline {
    std::vector<Span> spans;  // indexed like DeviceProgram::ops
    core::Time step_time = 0;
    std::uint64_t events = 0;          // events the engine processed
    std::vector<double> link_bytes;    // bytes each torus link carried, when a network was simulated
    std::uint64_t periods_jumped = 0;  // repeated periods not simulated one by one (ScheduleOptions)
};

}  // namespace podsim::scheduler
