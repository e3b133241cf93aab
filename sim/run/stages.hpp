#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "core/time.hpp"
#include "cost/cost_model.hpp"
#include "parallel/device_program.hpp"
#include "scheduler/timeline.hpp"

namespace podsim::run {

// One pipeline stage's program cut out of a program of several (parallel::DeviceProgram): its ops
// in their order, waiting only for each other, on its own resources and comm axes, with its state;
// its costs and timeline likewise. The memory profile and the report read one chip's program, and
// every chip of a stage runs this one.
struct StageView {
    parallel::DeviceProgram program;
    std::vector<cost::OpCost> costs;
    scheduler::Timeline timeline;
    std::vector<std::size_t> ops;  // the whole program's index of each op
    // When the stage's compute waits for another stage: from the end of its previous compute op to
    // the start of a compute op that waits for a collective-permute (its input from another stage).
    std::vector<std::pair<core::Time, core::Time>> pipeline_waits;
};

// With `receives`, each activation the stage receives in the forward is an op of its own before the
// op that reads it (no time, no traffic, a continuation of its reader in op counts): kept until the
// backward of its layer, as the stage keeps its layers' inputs, so that its memory profile holds it.
StageView stage_view(const parallel::DeviceProgram& program, const std::vector<cost::OpCost>& costs,
                     const scheduler::Timeline& timeline, int stage, bool receives = false);
// Every stage's, in one pass over the program.
std::vector<StageView> stage_views(const parallel::DeviceProgram& program,
                                   const std::vector<cost::OpCost>& costs,
                                   const scheduler::Timeline& timeline, bool receives = false);

}  // namespace podsim::run
