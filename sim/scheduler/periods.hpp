#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/time.hpp"
#include "parallel/device_program.hpp"
#include "scheduler/timeline.hpp"

namespace podsim::scheduler {

// What makes two ops behave the same in the scheduler, op by op (indexed like program.ops).
struct OpBehaviour {
    const std::vector<core::Time>& duration;
    const std::vector<const void*>& transfer;    // the plan or run-alone record a collective replays
    const std::vector<int>& network;             // contention class, or -1
    const std::vector<std::size_t>& pred_begin;  // predecessors as a CSR: preds[pred_begin[i]..]
    const std::vector<int>& preds;
};

// Blocks start where the compute stream moves to another (microbatch, phase, layer); consecutive
// blocks whose ops have the same resource, duration, transfer, network and predecessors at the same
// distances form a region. Only regions of at least `min_count` blocks are returned.
std::vector<PeriodicRegion> periodic_regions(const parallel::DeviceProgram& program,
                                             const OpBehaviour& behaviour, std::size_t min_count);

// Whether the second block of each two-block region is the same as its first (as periodic_regions
// compares blocks), for regions of one length that overlap (the candidates of folded
// microbatches): each op is compared with the one a period before only once. Fills in the
// dependency spans of those that are; false for the others and for those past the program's end.
std::vector<bool> identical_two_blocks(const parallel::DeviceProgram& program, const OpBehaviour& behaviour,
                                       std::vector<PeriodicRegion>& regions);

}  // namespace podsim::scheduler
