#include "report/build_report.hpp"

#include <algorithm>
#include <array>

#include "core/time.hpp"
#include "cost/matmul_shape.hpp"

namespace podsim::report {
namespace {

using Interval = std::pair<core::Time, core::Time>;

std::vector<Interval> merged(std::vector<Interval> v) {
    // Compute ops run one at a time in program order: their intervals come sorted.
    if (!std::is_sorted(v.begin(), v.end())) std::sort(v.begin(), v.end());
    std::size_t kept = 0;  // in place: the merged list is never longer than what was read of v
    for (std::size_t i = 0; i < v.size(); ++i) {
        const Interval iv = v[i];
        if (iv.second <= iv.first) continue;
        if (kept > 0 && iv.first <= v[kept - 1].second) {
            v[kept - 1].second = std::max(v[kept - 1].second, iv.second);
        } else {
            v[kept++] = iv;
        }
    }
    v.resize(kept);
    return v;
}

core::Time length(const std::vector<Interval>& v) {
    core::Time t = 0;
    for (const auto& iv : v) t += iv.second - iv.first;
    return t;
}

// |a ∩ b| for two merged interval lists.
core::Time overlap(const std::vector<Interval>& a, const std::vector<Interval>& b) {
    core::Time t = 0;
    std::size_t i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        core::Time lo = std::max(a[i].first, b[j].first);
        core::Time hi = std::min(a[i].second, b[j].second);
        if (hi > lo) t += hi - lo;
        if (a[i].second < b[j].second) {
            ++i;
        } else {
            ++j;
        }
    }
    return t;
}

// The intervals of a merged list (sorted, disjoint) that can meet [lo, hi): found by binary search,
// since a folded report asks for the window of every splice of a step.
std::pair<std::vector<Interval>::const_iterator, std::vector<Interval>::const_iterator> within(
    const std::vector<Interval>& v, core::Time lo, core::Time hi) {
    auto first =
        std::partition_point(v.begin(), v.end(), [lo](const Interval& iv) { return iv.second <= lo; });
    auto last = std::partition_point(first, v.end(), [hi](const Interval& iv) { return iv.first < hi; });
    return {first, last};
}

// |v ∩ [lo, hi)| for a merged interval list.
core::Time length_within(const std::vector<Interval>& v, core::Time lo, core::Time hi) {
    core::Time t = 0;
    auto [first, last] = within(v, lo, hi);
    for (auto it = first; it != last; ++it) {
        const core::Time a = std::max(it->first, lo), b = std::min(it->second, hi);
        if (b > a) t += b - a;
    }
    return t;
}

// overlap() of the two lists clipped to [lo, hi) (each interval cut to the window, the empty ones
// dropped), without copying them.
core::Time overlap_within(const std::vector<Interval>& a, const std::vector<Interval>& b, core::Time lo,
                          core::Time hi) {
    auto [i, a_end] = within(a, lo, hi);
    auto [j, b_end] = within(b, lo, hi);
    const auto clip = [lo, hi](const Interval& iv) {
        return Interval{std::max(iv.first, lo), std::min(iv.second, hi)};
    };
    const auto skip_empty = [&](auto& it, auto end) {
        while (it != end && clip(*it).second <= clip(*it).first) ++it;
    };
    skip_empty(i, a_end);
    skip_empty(j, b_end);
    core::Time t = 0;
    while (i != a_end && j != b_end) {
        const Interval x = clip(*i), y = clip(*j);
        const core::Time start = std::max(x.first, y.first), end = std::min(x.second, y.second);
        if (end > start) t += end - start;
        if (x.second < y.second) {
            ++i;
            skip_empty(i, a_end);
        } else {
            ++j;
            skip_empty(j, b_end);
        }
    }
    return t;
}

std::vector<Interval> unite(const std::vector<Interval>& a, const std::vector<Interval>& b) {
    std::vector<Interval> all(a.size() + b.size());
    std::merge(a.begin(), a.end(), b.begin(), b.end(), all.begin());  // both sorted: no sort needed
    return merged(std::move(all));
}

}  // namespace

double model_flops_per_step(const workload::ModelSpec& model, const workload::TrainingSpec& training,
                            bool with_attention) {
    double tokens = static_cast<double>(training.global_batch) * model.tokens_per_sample(training.seq_len);
    // The parameters a token goes through: an MoE layer's routed experts counted num_experts_per_tok
    // times, not num_experts (MaxText maxtext_utils.calculate_tflops_training_per_device).
    const workload::ParamCount params = workload::count_params(model);
    double flops = 6.0 * static_cast<double>(params.active) * tokens;
    // Dropping experts (sparse_matmul false, capacity_factor above 0) whose capacity is below the
    // tokens routed to them (even routing, as the partitioner assumes) leave the rest of each
    // token's k expert visits undone: those are not model FLOPs. MaxText counts every visit
    // whatever the capacity; the two agree for capacity_factor >= 1.
    if (model.is_moe() && !training.sparse_matmul && training.capacity_factor > 0.0) {
        const int sequence = model.tokens_per_sample(training.seq_len);
        const double visits = static_cast<double>(sequence) * model.experts_per_token;
        const double taken = std::min(
            visits, static_cast<double>(model.experts) *
                        static_cast<double>(model.expert_capacity(sequence, training.capacity_factor)));
        if (visits > 0.0 && taken < visits) {
            const double expert = static_cast<double>(params.routed_experts_per_moe_layer) / model.experts;
            flops -=
                6.0 * tokens * model.experts_per_token * expert * model.moe_layers() * (1.0 - taken / visits);
        }
    }
    if (with_attention) {
        flops += 12.0 * model.layers * static_cast<double>(model.tokens_per_sample(training.seq_len)) *
                 static_cast<double>(model.attention_width()) * tokens;
    }
    return flops;
}

MemoryReport memory_report(const memory::MemoryProfile& m, const parallel::DeviceProgram& program) {
    MemoryReport r;
    r.peak_bytes = m.peak_bytes;
    r.capacity_bytes = m.capacity_bytes;
    r.fits = m.fits;
    r.overflow_bytes = m.overflow_bytes;
    r.hbm_bytes = m.hbm_bytes;
    r.margin_bytes = m.capacity_bytes - m.peak_bytes;
    r.host_offload_bytes = m.host_offload_bytes;
    r.params_bytes = m.at_peak.params;
    r.grads_bytes = m.at_peak.grads;
    r.optimizer_bytes = m.at_peak.optimizer;
    r.activations_bytes = m.at_peak.activations;
    r.gathered_weights_bytes = m.at_peak.gathered_weights;
    r.collective_buffers_bytes = m.at_peak.collective_buffers;
    r.temporaries_bytes = m.at_peak.temporaries;
    r.peak_op =
        m.peak_op >= 0 ? std::string(program.ops[static_cast<std::size_t>(m.peak_op)].name) : std::string();
    r.peak_time_s = core::to_seconds(m.peak_time);
    return r;
}

RunReport build_report(const ReportInput& in) {
    const auto& ops = in.program.ops;
    const auto& spans = in.timeline.spans;
    RunReport r;
    r.name = in.name;
    r.model = in.model.name;
    r.topology = in.topology.name;
    r.slice = in.slice.to_string();
    r.slices = in.slices;
    r.mesh = in.mesh.to_string();
    r.framework = std::string(parallel::framework_name(in.runtime.framework));
    r.async_collectives = in.runtime.async();
    r.chips = in.program.chips;
    // Devices the mesh uses per chip (a one-chip job may use one of a v3 chip's two).
    r.devices_per_chip = hardware::devices_per_chip_in_use(in.topology, in.slice, in.mesh.ici_size());
    r.params = workload::count_params(in.model).total;
    const std::vector<scheduler::Splice> no_splices;
    const auto& splices = in.splices ? *in.splices : no_splices;
    r.ops = static_cast<long>(ops.size());
    r.events = in.timeline.events;
    core::Time step = in.timeline.step_time;
    for (const auto& splice : splices) {
        r.ops += static_cast<long>(splice.copies * (splice.op_end - splice.op_begin));
        r.events += splice.copies * splice.events;
        step += static_cast<core::Time>(splice.copies) * splice.period;
    }

    r.step_time_s = core::to_seconds(step);
    r.tokens_per_step =
        static_cast<double>(in.training.global_batch) * in.model.tokens_per_sample(in.training.seq_len);
    r.tokens_per_s = r.step_time_s > 0 ? r.tokens_per_step / r.step_time_s : 0.0;
    // Per device (r.chips counts mesh devices): MFU is the same whether counted by chips or devices.
    r.peak_flops_per_chip = in.topology.chip.device_peak_flops_for(in.training.dtype);
    r.model_flops_per_step = model_flops_per_step(in.model, in.training, in.mfu_attention);
    double executed_per_chip = 0.0;
    for (const auto& op : ops) executed_per_chip += op.flops;
    for (const auto& splice : splices) {
        double period_flops = 0.0;
        for (std::size_t i = splice.op_begin; i < splice.op_end; ++i) period_flops += ops[i].flops;
        executed_per_chip += static_cast<double>(splice.copies) * period_flops;
    }
    r.hardware_flops_per_step = executed_per_chip * static_cast<double>(r.chips);
    double capacity = r.step_time_s * static_cast<double>(r.chips) * r.peak_flops_per_chip;
    r.mfu = capacity > 0 ? r.model_flops_per_step / capacity : 0.0;
    r.hfu = capacity > 0 ? r.hardware_flops_per_step / capacity : 0.0;
    r.mfu_convention = in.mfu_attention ? "6N+attention" : "6N";

    r.memory = memory_report(in.memory, in.program);
    r.host_peak_bytes = in.host.peak_bytes;
    r.host_capacity_bytes = in.host.capacity_bytes;
    r.host_fits = in.host.fits;
    r.host_processes = in.host.processes;
    r.host_full_model = in.host.full_model;
    r.compile_time_s = in.compile_time_s;
    r.recompile_every_step = in.runtime.recompile_every_step;

    std::vector<Interval> compute, comm, host;
    compute.reserve(ops.size());
    comm.reserve(ops.size());
    // By OpCategory (copy is its last); `seen` marks those the program has, counted or not.
    constexpr std::size_t kCategories = static_cast<std::size_t>(parallel::OpCategory::copy) + 1;
    std::array<CategoryStat, kCategories> stats;
    std::array<bool, kCategories> seen{};
    std::array<CategoryStat, 3> shapes;  // by cost::MatmulShapeClass
    // Times are summed in integer picoseconds, exactly, whatever the order: a folded report adds a
    // period's sums once per copy and must give the same numbers.
    core::Time matmul_time = 0, device_op_time = 0;
    std::array<core::Time, 4> phase_time{};  // by workload::Phase
    std::array<core::Time, kCategories> category_time{};
    std::array<core::Time, 3> shape_time{};
    std::vector<core::Time> busy(in.program.resources.size(), 0);
    // One op's share, `weight` times (the copies of a spliced period).
    // (Inlined: it runs for every op and every op of every splice's copies.)
    auto account = [&](std::size_t i, std::size_t weight) __attribute__((always_inline)) {
        const auto& op = ops[i];
        const core::Time time = static_cast<core::Time>(weight) * (spans[i].end - spans[i].start);
        busy[static_cast<std::size_t>(op.resource)] += time;
        if (op.category != parallel::OpCategory::host) {
            if (!parallel::is_collective(op.category) && op.category != parallel::OpCategory::copy)
                phase_time[static_cast<std::size_t>(op.phase)] += time;
            device_op_time += time;
        }
        if (op.category == parallel::OpCategory::matmul) {
            const auto shape = static_cast<std::size_t>(in.costs[i].shape_class);
            if (!op.continuation) shapes[shape].count += static_cast<long>(weight);
            shape_time[shape] += time;
            matmul_time += time;
        }
        const auto category = static_cast<std::size_t>(op.category);
        seen[category] = true;
        if (!op.continuation) stats[category].count += static_cast<long>(weight);
        category_time[category] += time;
    };
    for (std::size_t i = 0; i < ops.size(); ++i) {
        const auto& op = ops[i];
        Interval iv{spans[i].start, spans[i].end};
        account(i, 1);
        // Empty ones cover nothing (merged() drops them), and a pipeline stage's held buffers, empty
        // and after its ops, would unsort the compute ops' list.
        if (iv.second <= iv.first) continue;
        if (op.category == parallel::OpCategory::host) {
            host.push_back(iv);
        } else if (parallel::is_collective(op.category) || op.category == parallel::OpCategory::copy) {
            comm.push_back(iv);
        } else {
            compute.push_back(iv);
        }
    }
    for (const auto& splice : splices)
        for (std::size_t i = splice.op_begin; i < splice.op_end; ++i) account(i, splice.copies);
    r.forward_s = core::to_seconds(phase_time[static_cast<std::size_t>(workload::Phase::forward)]);
    r.backward_s = core::to_seconds(phase_time[static_cast<std::size_t>(workload::Phase::backward)]);
    r.recompute_s = core::to_seconds(phase_time[static_cast<std::size_t>(workload::Phase::recompute)]);
    r.optimizer_s = core::to_seconds(phase_time[static_cast<std::size_t>(workload::Phase::optimizer)]);
    for (std::size_t c = 0; c < kCategories; ++c) stats[c].time_s = core::to_seconds(category_time[c]);
    for (std::size_t c = 0; c < shapes.size(); ++c) shapes[c].time_s = core::to_seconds(shape_time[c]);
    compute = merged(std::move(compute));
    comm = merged(std::move(comm));
    host = merged(std::move(host));
    core::Time compute_t = length(compute);
    core::Time comm_t = length(comm);
    core::Time comm_hidden = overlap(comm, compute);
    auto device = unite(compute, comm);
    auto everything = unite(device, host);
    core::Time everything_t = length(everything), device_t = length(device);
    // A spliced copy adds what its template period [at - period, at) holds.
    for (const auto& splice : splices) {
        const core::Time lo = splice.at - splice.period, hi = splice.at;
        const auto copies = static_cast<core::Time>(splice.copies);
        compute_t += copies * length_within(compute, lo, hi);
        comm_t += copies * length_within(comm, lo, hi);
        comm_hidden += copies * overlap_within(comm, compute, lo, hi);
        everything_t += copies * length_within(everything, lo, hi);
        device_t += copies * length_within(device, lo, hi);
    }
    r.compute_s = core::to_seconds(compute_t);
    r.communication_s = core::to_seconds(comm_t);
    r.overlapped_communication_s = core::to_seconds(comm_hidden);
    r.exposed_communication_s = core::to_seconds(comm_t - comm_hidden);
    r.host_s = core::to_seconds(everything_t - device_t);
    core::Time bubble = 0;
    if (in.pipeline_waits != nullptr && !in.pipeline_waits->empty()) {
        // The idle time inside the waits: [0, step) outside everything that ran.
        std::vector<Interval> idle;
        core::Time at = 0;
        for (const auto& iv : everything) {
            if (iv.first > at) idle.emplace_back(at, iv.first);
            at = std::max(at, iv.second);
        }
        if (step > at) idle.emplace_back(at, step);
        bubble = overlap(merged(*in.pipeline_waits), idle);
    }
    r.pipeline_bubble_s = core::to_seconds(bubble);
    r.idle_s = core::to_seconds(step - everything_t - bubble);

    for (std::size_t c = 0; c < kCategories; ++c) {
        if (!seen[c]) continue;
        CategoryStat& s = stats[c];
        s.category = std::string(parallel::category_name(static_cast<parallel::OpCategory>(c)));
        s.fraction =
            s.category == "host" || device_op_time <= 0 ? 0.0 : s.time_s / core::to_seconds(device_op_time);
        r.op_stats.push_back(s);
    }
    std::sort(r.op_stats.begin(), r.op_stats.end(), [](const CategoryStat& a, const CategoryStat& b) {
        if (a.time_s != b.time_s) return a.time_s > b.time_s;
        return a.category < b.category;
    });
    for (auto shape :
         {cost::MatmulShapeClass::large, cost::MatmulShapeClass::medium, cost::MatmulShapeClass::small}) {
        CategoryStat s = shapes[static_cast<std::size_t>(shape)];
        if (s.count == 0) continue;
        s.category = std::string(cost::shape_class_name(shape));
        s.fraction = matmul_time > 0 ? s.time_s / core::to_seconds(matmul_time) : 0.0;
        r.matmul_shapes.push_back(s);
    }
    for (std::size_t i = 0; i < busy.size(); ++i) {
        double b = core::to_seconds(busy[i]);
        r.resources.push_back(
            ResourceStat{in.program.resources[i].name, b, r.step_time_s > 0 ? b / r.step_time_s : 0.0});
    }
    return r;
}

}  // namespace podsim::report
