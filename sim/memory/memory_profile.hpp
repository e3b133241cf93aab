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
    double capacity_bytes = 0.0;      // what the runtime grants XLA (the verdict's limit)
    double hbm_bytes = 0.0;           // the device's HBM
    double host_offload_bytes = 0.0;  // residuals in pinned host memory at once (remat offload)
    bool fits = true;
    double overflow_bytes = 0.0;        // peak - capacity when it does not fit
    std::vector<MemorySample> samples;  // live bytes after each change, for the trace's counter
};

// A timeline with periods spliced in (run/fold.hpp): the memory curve of each inserted copy is the
// template period's plus the period's drift once per copy, and everything after it moves up by the
// drifts of all the copies. `fixed` is the state of the whole model (not the cut one simulated).
// `outer` (folded microbatches) is a period holding splices of its own: its copies repeat the curve
// of the period with its splices inserted, which is only the whole step's when the live bytes at
// its end are those at its start, holder by holder, and every sum is exact (FoldedPeak::
// outer_repeats).
struct MemoryFold {
    const std::vector<scheduler::Splice>& splices;
    double params_bytes = 0.0, grads_bytes = 0.0, optimizer_bytes = 0.0;
    const scheduler::Splice* outer = nullptr;
};

// Where the peak of a folded profile was: `peak_op` is the op of the simulated timeline, run by
// the copy `copy` (1..copies) of splice `splice`, or by the timeline itself when copy is 0 (in
// the template of MemoryFold::outer when the peak is in one of its copies: they repeat it).
struct FoldedPeak {
    std::size_t splice = 0;
    std::size_t copy = 0;
    // MemoryFold::outer ends with the live bytes it starts with, and the state and every allocation
    // are whole numbers of bytes: the sums are then exact in any order (the splices add a drift
    // times its copies, the whole step adds it copy by copy), and the whole step's curve reaches the
    // same levels in every microbatch, bit for bit. With fractions of bytes, rounding decided which
    // of its equal peaks came first (differential fuzzing against --exact).
    bool outer_repeats = true;
};

// Replays the timeline and tracks every allocation: parameters, gradients and optimizer state for
// the whole step; a forward output kept for the backward from its end until its layer's backward
// is done; gathered weights from their all-gather until their last user in that pass; gradient
// buffers until their reduce-scatter ends; other outputs until the next compute op finishes.
MemoryProfile profile_memory(const parallel::DeviceProgram& program, const scheduler::Timeline& timeline,
                             double capacity_bytes, const MemoryFold* fold = nullptr,
                             FoldedPeak* folded_peak = nullptr);

// A lower bound on profile_memory's peak for every schedule of `program` (whatever the timeline,
// e.g. at any FSDP prefetch depth): the memory a step holds that no scheduling choice changes.
// With `fold`: of the program with layer `fold->layer`'s residuals kept `fold->extra` more times and
// the whole model's state (run/fold.hpp).
struct LeastPeakFold {
    double fixed = 0.0;  // parameters and optimizer state of the whole model
    double grads = 0.0;  // gradients of the whole model
    int layer = 0;
    int extra = 0;
};
double least_peak_bytes(const parallel::DeviceProgram& program, const LeastPeakFold* fold = nullptr);

}  // namespace podsim::memory
