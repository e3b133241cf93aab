#pragma once

#include <vector>

#include "core/time.hpp"
#include "parallel/device_program.hpp"
#include "scheduler/timeline.hpp"

namespace podsim::memory {

// Live HBM bytes on one chip, by what holds them.
struct MemoryBreakdown {
    double params = 0.0;
    double grads = 0.0;
    double optimizer = 0.0;
    double activations = 0.0;         // saved for the backward (and recomputed ones awaiting it)
    double gathered_weights = 0.0;    // FSDP all-gathered parameters in flight
    double collective_buffers = 0.0;  // unsharded gradients awaiting their reduce-scatter
    double temporaries = 0.0;         // outputs of ops not kept for the backward, until consumed

    double total() const {
        return params + grads + optimizer + activations + gathered_weights + collective_buffers + temporaries;
    }
};

struct MemorySample {
    core::Time time = 0;
    double live_bytes = 0.0;
};

struct MemoryProfile {
    double peak_bytes = 0.0;
    core::Time peak_time = 0;
    int peak_op = -1;  // the op running when the peak was reached
    MemoryBreakdown at_peak;
    double capacity_bytes = 0.0;
    bool fits = true;
    double overflow_bytes = 0.0;        // peak - capacity when it does not fit
    std::vector<MemorySample> samples;  // live bytes after each change, for the trace's counter
};

// Replays the timeline and tracks every allocation: parameters, gradients and optimizer state for
// the whole step; a forward output kept for the backward from its end until its layer's backward
// is done; gathered weights from their all-gather until their last user in that pass; gradient
// buffers until their reduce-scatter ends; other outputs until the next compute op finishes.
MemoryProfile profile_memory(const parallel::DeviceProgram& program, const scheduler::Timeline& timeline,
                             double capacity_bytes);

// A lower bound on profile_memory's peak for every schedule of `program` (whatever the timeline,
// e.g. at any FSDP prefetch depth): the memory a step holds that no scheduling choice changes.
double least_peak_bytes(const parallel::DeviceProgram& program);

}  // namespace podsim::memory
