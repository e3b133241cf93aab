#pragma once

#include <cstddef>
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

// One jump over repeated periods (ScheduleOptions::jump_periods): the period that ran from
// `template_start` to `template_start + period` (its ops started in that window) repeated `periods`
// times, from the start of block `first_op` (a block boundary) on; each period holds `length` ops.
struct PeriodJump {
    std::size_t first_op = 0;
    std::size_t length = 0;
    std::size_t periods = 0;
    core::Time template_start = 0;
    core::Time period = 0;
};

struct Timeline {
    std::vector<Span> spans;  // indexed like DeviceProgram::ops
    core::Time step_time = 0;
    std::uint64_t events = 0;        // events the engine processed
    std::vector<double> link_bytes;  // bytes each torus link carried, when a network was simulated
    std::vector<PeriodJump> jumps;   // in the order they happened

    // Repeated periods not simulated one by one (ScheduleOptions).
    std::uint64_t periods_jumped() const {
        std::uint64_t periods = 0;
        for (const auto& jump : jumps) periods += jump.periods;
        return periods;
    }
};

}  // namespace podsim::scheduler
