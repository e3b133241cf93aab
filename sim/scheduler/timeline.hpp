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
    std::uint64_t events_per_period = 0;  // engine events one period stands for
};

// A run of identical periods in program order: `count` blocks of `length` ops from `first_op`, each
// the same as the one before shifted by `length` ops (the layers of one pass of one microbatch;
// scheduler/periods.hpp finds them).
struct PeriodicRegion {
    std::size_t first_op = 0;
    std::size_t length = 0;
    std::size_t count = 0;
    std::size_t dependency_span = 0;  // largest op - dependency distance inside the region
    std::size_t end() const { return first_op + length * count; }
};

// A watched two-block region (ScheduleOptions::watch): `repeated` when the state at the start of
// its second block was its first's, `period` later; `events` were run in between.
struct WatchedPeriod {
    std::size_t first_op = 0;
    std::size_t length = 0;
    bool repeated = false;
    core::Time start = 0;
    core::Time period = 0;
    std::uint64_t events = 0;
};

// Periods a folded simulation inserts into its timeline (run/fold.hpp): `copies` more copies of the
// period [at - period, at), whose ops are [op_begin, op_end), all at `at`; what ran from `at` on
// moves `copies` periods later. Splices are in time order and their periods do not overlap.
struct Splice {
    core::Time at = 0;
    core::Time period = 0;
    std::size_t copies = 0;
    std::size_t op_begin = 0, op_end = 0;
    std::uint64_t events = 0;  // per period
};

struct Timeline {
    std::vector<Span> spans;  // indexed like DeviceProgram::ops
    core::Time step_time = 0;
    std::uint64_t events = 0;        // events the engine processed
    std::vector<double> link_bytes;  // bytes each torus link carried, when a network was simulated
    std::vector<PeriodJump> jumps;   // in the order they happened
    // The regions the scheduler watched for a repeating state, whether or not it jumped (with
    // ScheduleOptions::jump_periods), in program order.
    std::vector<PeriodicRegion> regions;
    std::vector<WatchedPeriod> watched;  // one per ScheduleOptions::watch region

    // Repeated periods not simulated one by one (ScheduleOptions).
    std::uint64_t periods_jumped() const {
        std::uint64_t periods = 0;
        for (const auto& jump : jumps) periods += jump.periods;
        return periods;
    }
};

}  // namespace podsim::scheduler
