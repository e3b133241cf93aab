#include "run/fold.hpp"

#include <algorithm>

#include <fmt/format.h>

namespace podsim::run {
namespace {

// Layers of the cut model a folded simulation runs: enough for every run of layers to settle into
// its period and jump, with the first and last layers of each run (which differ) apart. The cut
// model has the whole one's parity, as a period may be two layers. 10 folds as often as 12 did
// (every random 175B sweep point, 39 of 46 shipped configs). Synchronous collectives prefetch
// nothing, and 8 layers are enough for them: every synchronous config of the 175B and GPT-2 sweeps
// of `make bench` folds at 8, while half the asynchronous 175B configs do not.
constexpr int kFoldLayers = 10;
constexpr int kFoldLayersSynchronous = 8;
// Layers at either end of the cut model that may fall outside the periodic regions.
constexpr int kFoldEdgeLayers = 3;
// Microbatches of a cut step: the first (nothing before it), two the same (the period, and the one
// that certifies it) and the last (the gradient all-reduces follow it).
constexpr int kFoldMicrobatches = 4;
// Period starts tried for folded microbatches: block starts of microbatch 1 (the first ones where
// what the microbatch before it left in flight has finished, and the runs of layers have not
// jumped yet, or have already). Those whose period would reach ops of the last microbatch that
// differ (its gradient all-reduces) are not watched.
constexpr std::size_t kMicrobatchPeriodStarts = 48;

// The layer of the whole model that op `op` of the cut model stands for, run by copy `copy` of
// splice `splice` (copy 0: the cut model's own run of it).
int folded_layer(const Simulation& sim, const Fold& fold, std::size_t op, std::size_t splice,
                 std::size_t copy) {
    const auto& ops = sim.program.ops;
    const int layer = ops[op].layer;
    const int extra = fold.layers - fold.cut_layers;
    for (std::size_t r = 0; r < sim.timeline.regions.size(); ++r) {
        const auto& region = sim.timeline.regions[r];
        if (op < region.first_op || op >= region.first_op + region.length * region.count) continue;
        const auto& jump = sim.timeline.jumps[fold.jump_of_region[r]];
        const int first = ops[region.first_op].layer;
        const int step = ops[region.first_op + region.length].layer - first;
        const auto block = static_cast<int>((op - region.first_op) / region.length);
        const auto jump_block = static_cast<int>((jump.first_op - region.first_op) / region.length);
        const auto period_blocks = static_cast<int>(jump.length / region.length);
        int whole_block = block >= jump_block ? block + extra : block;
        if (copy > 0 && fold.region_of_splice[splice] == r)
            whole_block = block + static_cast<int>(copy) * period_blocks;
        return (step > 0 ? first : first + extra) + step * whole_block;
    }
    return layer < fold.cut_layers / 2 ? layer : layer + extra;
}

}  // namespace

int cut_layers(int layers, bool synchronous) {
    const int base = synchronous ? kFoldLayersSynchronous : kFoldLayers;
    return base + (layers - base) % 2;
}

int cut_microbatches(int microbatches, std::int64_t global_batch) {
    if (microbatches <= kFoldMicrobatches || global_batch % microbatches != 0) return 0;
    return kFoldMicrobatches;
}

std::vector<scheduler::PeriodicRegion> microbatch_periods(const parallel::DeviceProgram& program) {
    const auto& ops = program.ops;
    std::size_t start[4] = {0, 0, 0, 0};  // first op of microbatches 1, 2 and 3
    bool found[4] = {true, false, false, false};
    for (std::size_t i = 0; i < ops.size(); ++i) {
        const int mb = ops[i].microbatch;
        if (mb >= 1 && mb <= 3 && !found[mb]) {
            found[mb] = true;
            start[mb] = i;
        }
    }
    std::vector<scheduler::PeriodicRegion> periods;
    if (!found[1] || !found[2] || !found[3]) return periods;
    const std::size_t length = start[2] - start[1];
    int last_layer = -2;
    for (std::size_t i = start[1]; i < start[2] && periods.size() < kMicrobatchPeriodStarts; ++i) {
        const auto& op = ops[i];
        const auto& resource = program.resources[static_cast<std::size_t>(op.resource)];
        if (resource.kind != parallel::ResourceKind::compute || op.layer == last_layer) continue;
        last_layer = op.layer;
        periods.push_back(scheduler::PeriodicRegion{i, length, 2, 0});
    }
    return periods;
}

std::string folded_peak_name(const Simulation& sim, const Fold& fold, const memory::FoldedPeak& peak) {
    const auto op = static_cast<std::size_t>(sim.memory.peak_op);
    std::string name(sim.program.ops[op].name);
    const int layer = sim.program.ops[op].layer;
    if (layer < 0) return name;
    const std::string prefix = fmt::format("layer{}.", layer);
    if (name.rfind(prefix, 0) != 0) return name;
    return fmt::format("layer{}.{}", folded_layer(sim, fold, op, peak.splice, peak.copy),
                       name.substr(prefix.size()));
}

// Certified when each region of identical blocks is a run of consecutive layers of one microbatch
// that the scheduler jumped once, by a period that divides the layers added, and no layer away from
// the ends has an op outside a region.
std::optional<Fold> make_fold(const RunSpec& spec, const Simulation& cut) {
    const auto& ops = cut.program.ops;
    const auto& regions = cut.timeline.regions;
    const auto& jumps = cut.timeline.jumps;
    Fold fold;
    fold.layers = spec.model.layers;
    fold.cut_layers = cut.graph->layers;
    const int extra = fold.layers - fold.cut_layers;
    if (regions.size() != jumps.size()) return std::nullopt;
    // Offloaded activations: a copy back is issued a layer ahead of its backward, and with
    // synchronous collectives the spliced reports came out wrong (differential fuzzing against
    // --exact): not folded until that is understood.
    for (const auto& op : ops)
        if (op.category == parallel::OpCategory::copy) return std::nullopt;
    std::vector<bool> in_region(ops.size(), false);
    fold.ops = static_cast<long>(ops.size());
    for (std::size_t r = 0; r < regions.size(); ++r) {
        const auto& region = regions[r];
        const std::size_t end = region.first_op + region.length * region.count;
        std::size_t found = jumps.size(), inside = 0;
        for (std::size_t j = 0; j < jumps.size(); ++j) {
            if (jumps[j].first_op >= region.first_op && jumps[j].first_op < end) {
                found = j;
                ++inside;
            }
        }
        if (inside != 1) return std::nullopt;
        fold.jump_of_region.push_back(found);
        const auto& jump = jumps[found];
        // The template period (the one before the jump) lies in the region.
        if (region.count < 2 || jump.length % region.length != 0 ||
            jump.first_op < region.first_op + jump.length)
            return std::nullopt;
        const int first = ops[region.first_op].layer;
        const int step = ops[region.first_op + region.length].layer - first;
        if (first < 0 || (step != 1 && step != -1)) return std::nullopt;
        for (std::size_t k = 0; k < region.count; ++k) {
            const auto& op = ops[region.first_op + k * region.length];
            if (op.layer != first + step * static_cast<int>(k) ||
                op.microbatch != ops[region.first_op].microbatch)
                return std::nullopt;
        }
        const auto period_blocks = static_cast<int>(jump.length / region.length);
        if (extra % period_blocks != 0) return std::nullopt;
        for (std::size_t i = region.first_op; i < end; ++i) in_region[i] = true;
        const auto copies = static_cast<std::size_t>(extra / period_blocks);
        fold.splices.push_back(scheduler::Splice{jump.template_start + jump.period, jump.period, copies,
                                                 jump.first_op - jump.length, jump.first_op,
                                                 jump.events_per_period});
        fold.ops += static_cast<long>(copies * jump.length);
    }
    for (std::size_t i = 0; i < ops.size(); ++i) {
        const int layer = ops[i].layer;
        if (!in_region[i] && layer >= kFoldEdgeLayers && layer < fold.cut_layers - kFoldEdgeLayers)
            return std::nullopt;
    }
    std::vector<std::size_t> order(fold.splices.size());
    for (std::size_t j = 0; j < order.size(); ++j) order[j] = j;
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return fold.splices[a].at < fold.splices[b].at; });
    std::vector<scheduler::Splice> sorted;
    for (std::size_t j : order) {
        sorted.push_back(fold.splices[j]);
        fold.region_of_splice.push_back(j);  // splice j was made for region j
    }
    fold.splices = std::move(sorted);
    for (std::size_t j = 1; j < fold.splices.size(); ++j)
        if (fold.splices[j].at - fold.splices[j].period < fold.splices[j - 1].at) return std::nullopt;
    fold.report_splices = fold.splices;
    fold.microbatches = spec.training.microbatches;
    if (cut.program.microbatches != fold.microbatches) fold.cut_microbatches = cut.program.microbatches;
    if (fold.cut_microbatches > 0) {
        // The first watched period whose end repeated its start: the microbatches between the first
        // and the last repeat it (docs/model.md, "Folding microbatches").
        const scheduler::WatchedPeriod* period = nullptr;
        for (const auto& w : cut.timeline.watched)
            if (w.repeated && period == nullptr) period = &w;
        if (period == nullptr || period->period <= 0) return std::nullopt;
        const scheduler::Splice outer{period->start + period->period,
                                      period->period,
                                      static_cast<std::size_t>(fold.microbatches - fold.cut_microbatches),
                                      period->first_op,
                                      period->first_op + period->length,
                                      period->events};
        const core::Time lo = outer.at - outer.period;
        long inner_ops = 0;
        for (const auto& s : fold.splices) {
            const bool ops_inside = s.op_begin >= outer.op_begin && s.op_end <= outer.op_end;
            const bool ops_outside = s.op_end <= outer.op_begin || s.op_begin >= outer.op_end;
            const bool time_inside = s.at - s.period >= lo && s.at <= outer.at;
            const bool time_outside = s.at <= lo || s.at - s.period >= outer.at;
            if (ops_inside && time_inside) {
                scheduler::Splice again = s;
                again.copies = s.copies * outer.copies;
                fold.report_splices.push_back(again);
                inner_ops += static_cast<long>(s.copies * (s.op_end - s.op_begin));
            } else if (!(ops_outside && time_outside)) {
                return std::nullopt;  // a run of layers across the period's ends
            }
        }
        fold.microbatch = outer;
        fold.report_splices.push_back(outer);
        fold.ops +=
            static_cast<long>(outer.copies) * (static_cast<long>(outer.op_end - outer.op_begin) + inner_ops);
    }
    // The whole step must be representable: the whole simulation then reports what is not.
    core::Time step = cut.timeline.step_time;
    for (const auto& splice : fold.report_splices) {
        core::Time added = 0;
        if (__builtin_mul_overflow(static_cast<core::Time>(splice.copies), splice.period, &added) ||
            __builtin_add_overflow(step, added, &step))
            return std::nullopt;
    }
    // Whole-step state: the cut graph's groups are the embedding, one per layer, then the head.
    const auto& groups = cut.graph->param_groups;
    if (groups.size() != static_cast<std::size_t>(fold.cut_layers) + 2) return std::nullopt;
    for (std::size_t g = 2; g + 1 < groups.size(); ++g)
        if (groups[g].params != groups[1].params || groups[g].tensor_sharded != groups[1].tensor_sharded ||
            groups[g].matrices != groups[1].matrices)
            return std::nullopt;
    std::vector<const workload::ParamGroup*> whole;
    whole.push_back(&groups.front());
    for (int l = 0; l < fold.layers; ++l) whole.push_back(&groups[1]);
    whole.push_back(&groups.back());
    fold.state = parallel::state_bytes(whole, spec.training, spec.mesh);
    return fold;
}

}  // namespace podsim::run
