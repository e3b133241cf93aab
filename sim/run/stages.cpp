#include "run/stages.hpp"

#include <algorithm>
#include <cstdint>

namespace podsim::run {

std::vector<StageView> stage_views(const parallel::DeviceProgram& program,
                                   const std::vector<cost::OpCost>& costs,
                                   const scheduler::Timeline& timeline, bool receives) {
    const auto stages = static_cast<std::size_t>(std::max(1, program.stages));
    std::vector<StageView> views(stages);
    const auto& all = program.ops;
    // Resources and comm axes of each stage, renumbered from 0 in their order.
    std::vector<int> resource_index(program.resources.size(), -1), axis_index(program.comm_axes.size(), -1);
    for (std::size_t a = 0; a < program.comm_axes.size(); ++a) {
        auto& v = views[static_cast<std::size_t>(program.comm_axes[a].stage)];
        axis_index[a] = static_cast<int>(v.program.comm_axes.size());
        v.program.comm_axes.push_back(program.comm_axes[a]);
    }
    std::vector<int> stage_of_resource(program.resources.size(), 0);
    for (std::size_t r = 0; r < program.resources.size(); ++r) {
        auto& v = views[static_cast<std::size_t>(program.resources[r].stage)];
        stage_of_resource[r] = program.resources[r].stage;
        resource_index[r] = static_cast<int>(v.program.resources.size());
        parallel::Resource resource = program.resources[r];
        if (resource.comm_axis >= 0)
            resource.comm_axis = axis_index[static_cast<std::size_t>(resource.comm_axis)];
        v.program.resources.push_back(std::move(resource));
    }
    // Each op's stage, and whether it is a collective-permute (its reader waits for another stage),
    // kept beside the ops: every dependency asks for them.
    constexpr std::uint8_t kPermute = 1, kUnreceived = 2;  // kUnreceived: a forward permute not yet received
    std::vector<int> stage_of(all.size());
    std::vector<std::uint8_t> permute(all.size(), 0);
    std::vector<std::size_t> per_stage(stages, 0);
    for (std::size_t i = 0; i < all.size(); ++i) {
        const auto& op = all[i];
        const int s = stage_of_resource[static_cast<std::size_t>(op.resource)];
        stage_of[i] = s;
        ++per_stage[static_cast<std::size_t>(s)];
        if (op.category == parallel::OpCategory::collective_permute)
            permute[i] = receives && op.phase == workload::Phase::forward ? kPermute | kUnreceived : kPermute;
    }
    for (std::size_t s = 0; s < stages; ++s) {
        // The receives are one per forward microbatch and chunk: fewer than the stage's ops.
        const std::size_t n = per_stage[s] * (receives ? 2 : 1);
        views[s].program.ops.reserve(n);
        views[s].costs.reserve(n);
        views[s].timeline.spans.reserve(n);
        views[s].ops.reserve(n);
    }
    // The view's index of each op, counting the receives placed before it; -1 for a permute not yet
    // received anywhere (a permute has one receiving stage: its consumers are all on it).
    std::vector<int> op_index(all.size(), -1);
    std::vector<core::Time> previous_end(stages, 0);
    for (std::size_t i = 0; i < all.size(); ++i) {
        const int stage = stage_of[i];
        const auto s = static_cast<std::size_t>(stage);
        StageView& v = views[s];
        const int resource = resource_index[static_cast<std::size_t>(all[i].resource)];
        const auto& span = timeline.spans[i];
        bool waits_for_stage = false;
        for (int d : all[i].deps) {
            const auto p = static_cast<std::size_t>(d);
            if (permute[p] != 0) {
                waits_for_stage = true;
                if (permute[p] & kUnreceived) {
                    permute[p] = kPermute;
                    // Held from when its reader starts, like the stage's own layer outputs.
                    parallel::DeviceOp& receive = v.program.ops.emplace_back();
                    receive.name = all[p].name;
                    receive.category = parallel::OpCategory::fusion;
                    receive.phase = workload::Phase::forward;
                    receive.kept_for_backward = true;
                    receive.continuation = true;  // not an op of its own in op counts
                    receive.layer = all[i].layer;
                    receive.microbatch = all[i].microbatch;
                    receive.resource = resource;
                    receive.output_bytes = all[p].collective_bytes;
                    receive.saved_bytes = all[p].collective_bytes;
                    receive.output_saved = true;
                    const auto k = static_cast<int>(v.program.ops.size()) - 1;
                    v.costs.emplace_back();
                    v.timeline.spans.push_back(scheduler::Span{k, resource, span.start, span.start});
                    v.ops.push_back(p);
                }
            }
        }
        const auto k = static_cast<int>(v.program.ops.size());
        op_index[i] = k;
        parallel::DeviceOp& op = v.program.ops.emplace_back(all[i]);
        op.resource = resource;
        if (op.comm_axis >= 0) op.comm_axis = axis_index[static_cast<std::size_t>(op.comm_axis)];
        if (op.source_op >= 0) op.source_op = op_index[static_cast<std::size_t>(op.source_op)];
        // Its deps on its own stage, as view indices, in place of the program's.
        int* kept = op.deps.begin();
        for (int d : all[i].deps)
            if (stage_of[static_cast<std::size_t>(d)] == stage)
                *kept++ = op_index[static_cast<std::size_t>(d)];
        op.deps.truncate(static_cast<std::size_t>(kept - op.deps.begin()));
        if (op.category == parallel::OpCategory::matmul || op.category == parallel::OpCategory::fusion) {
            core::Time& previous = previous_end[s];  // of the stage's previous compute op
            if (waits_for_stage && span.start > previous) v.pipeline_waits.emplace_back(previous, span.start);
            previous = span.end;
        }
        v.costs.push_back(costs[i]);
        v.timeline.spans.push_back(scheduler::Span{k, resource, span.start, span.end});
        v.ops.push_back(i);
    }
    // A recompute copy's residuals go with an op of the same stage: its index in the view.
    for (std::size_t s = 0; s < stages; ++s)
        for (auto& op : views[s].program.ops) {
            if (op.release_op < 0) continue;
            const auto r = static_cast<std::size_t>(op.release_op);
            op.release_op = stage_of[r] == static_cast<int>(s) ? op_index[r] : -1;
        }
    for (std::size_t s = 0; s < stages; ++s) {
        StageView& v = views[s];
        v.timeline.step_time = timeline.step_time;
        v.timeline.events = timeline.events;
        v.program.names = program.names;
        v.program.chips = program.chips;
        v.program.microbatches = program.microbatches;
        if (s < program.stage_state.size()) {
            v.program.params_bytes = program.stage_state[s].params_bytes;
            v.program.grads_bytes = program.stage_state[s].grads_bytes;
            v.program.optimizer_bytes = program.stage_state[s].optimizer_bytes;
        }
    }
    return views;
}

StageView stage_view(const parallel::DeviceProgram& program, const std::vector<cost::OpCost>& costs,
                     const scheduler::Timeline& timeline, int stage, bool receives) {
    return std::move(stage_views(program, costs, timeline, receives)[static_cast<std::size_t>(stage)]);
}

}  // namespace podsim::run
