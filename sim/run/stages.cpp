#include "run/stages.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <utility>

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

void add_pipeline_loop_buffers(std::vector<StageView>& views, const parallel::PipelineSchedule& pp,
                               double activation_bytes) {
    const bool circular_storage = pp.repeats > 1 && pp.microbatches > pp.stages;
    for (std::size_t s = 0; s < views.size(); ++s) {
        StageView& v = views[s];
        const auto& ops = v.program.ops;
        const auto& spans = v.timeline.spans;
        // The stage's layers' first and last forward and backward compute ops, and what each of its
        // iterations (chunk, microbatch) keeps for the backward.
        int first_forward = -1, last_forward = -1, first_backward = -1, last_backward = -1;
        std::map<std::pair<int, int>, double> kept;
        auto earlier = [&](int a, std::size_t b) {
            return a < 0 || spans[b].start < spans[static_cast<std::size_t>(a)].start;
        };
        auto later = [&](int a, std::size_t b) {
            return a < 0 || spans[b].end > spans[static_cast<std::size_t>(a)].end;
        };
        for (std::size_t i = 0; i < ops.size(); ++i) {
            const auto& op = ops[i];
            const bool compute =
                op.category == parallel::OpCategory::matmul || op.category == parallel::OpCategory::fusion;
            if (!compute || op.layer < 0 || op.phase == workload::Phase::optimizer) continue;
            if (op.phase == workload::Phase::forward) {
                if (op.kept_for_backward)
                    kept[{pp.chunk_of_layer(op.layer), op.microbatch}] += op.saved_bytes;
                if (op.continuation) continue;
                if (earlier(first_forward, i)) first_forward = static_cast<int>(i);
                if (later(last_forward, i)) last_forward = static_cast<int>(i);
            } else if (!op.continuation) {
                if (earlier(first_backward, i)) first_backward = static_cast<int>(i);
                if (later(last_backward, i)) last_backward = static_cast<int>(i);
            }
        }
        if (first_forward < 0 || first_backward < 0) continue;
        double per_iteration = 0.0;
        for (const auto& [key, bytes] : kept) per_iteration = std::max(per_iteration, bytes);
        const int layer = ops[static_cast<std::size_t>(first_forward)].layer;
        // An op that holds `bytes` from `at` until `release` ends.
        auto hold = [&](std::string_view name, double bytes, core::Time at, int release) {
            if (bytes <= 0.0) return;
            const auto r = static_cast<std::size_t>(release);
            parallel::DeviceOp op;
            op.name = name;
            op.category = parallel::OpCategory::fusion;
            op.phase = workload::Phase::forward;
            op.kept_for_backward = true;
            op.continuation = true;
            op.layer = layer;
            op.resource = v.program.ops[r].resource;
            op.release_op = release;
            op.output_bytes = bytes;
            op.saved_bytes = bytes;
            op.output_saved = true;
            const auto k = static_cast<int>(v.program.ops.size());
            const std::size_t whole = v.ops[r];
            v.program.ops.push_back(std::move(op));
            v.costs.emplace_back();
            v.timeline.spans.push_back(scheduler::Span{k, v.program.ops[r].resource, at, at});
            v.ops.push_back(whole);
        };
        const int before = static_cast<int>(s);  // iterations before the stage's first microbatch
        const int after = pp.stages - 1 - before;
        const core::Time forward_start = spans[static_cast<std::size_t>(first_forward)].start;
        const core::Time forward_end = spans[static_cast<std::size_t>(last_forward)].end;
        const core::Time backward_start = spans[static_cast<std::size_t>(first_backward)].start;
        // Appended after the stage's optimizer updates (whose outputs are no temporaries), so that no
        // temporary's lifetime moves.
        hold("pipeline.padding_iterations.first", before * per_iteration, forward_start, last_backward);
        hold("pipeline.padding_iterations.last", after * per_iteration, forward_end, first_backward);
        if (circular_storage) {
            const double storage = pp.microbatches * activation_bytes;
            hold("pipeline.circ_storage", storage, forward_start, last_forward);
            hold("pipeline.circ_storage.gradient", storage, backward_start, last_backward);
        }
    }
}

}  // namespace podsim::run
