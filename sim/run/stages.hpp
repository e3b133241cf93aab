#pragma once

#include <cstddef>
#include <utility>
#include <vector>

#include "core/time.hpp"
#include "cost/cost_model.hpp"
#include "parallel/device_program.hpp"
#include "parallel/pipeline_schedule.hpp"
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

// The buffers MaxText's pipeline loop adds to each stage's memory (layers/pipeline.py), as ops of
// the stages' views (`receives` views) that hold them, no time, continuations in op counts:
//  - the loop is a scan over all R·M + PP - 1 iterations, and every stage computes in each: in the
//    PP - 1 where it has no microbatch, on padding. Its checkpointed body keeps the same residuals
//    in those, so a stage keeps PP - 1 iterations' more than its microbatches': those before its
//    first microbatch until its backward ends, those after its last from its last forward until
//    its backward begins;
//  - with more microbatches than stages in a circular schedule, `circ_storage` holds every
//    microbatch's activations for the next repeat on every stage (one array of the microbatch's
//    stage input per microbatch) through the forward loop, and its gradient through the backward.
// `activation_bytes`: one microbatch's stage input on a chip (what a collective-permute hands on).
void add_pipeline_loop_buffers(std::vector<StageView>& views, const parallel::PipelineSchedule& pp,
                               double activation_bytes);

}  // namespace podsim::run
