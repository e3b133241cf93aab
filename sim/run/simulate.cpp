#include "run/simulate.hpp"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <tuple>

#include <fmt/format.h>

#include "core/diagnostics.hpp"
#include "parallel/parallelism.hpp"
#include "parallel/partition.hpp"
#include "parallel/pipeline_schedule.hpp"
#include "parallel/sharding_errors.hpp"
#include "report/build_report.hpp"
#include "run/fold.hpp"
#include "run/stages.hpp"
#include "scheduler/scheduler.hpp"
#include "workload/lower.hpp"

namespace podsim::run {

std::vector<SemanticError> semantic_errors(const RunSpec& spec) {
    return parallel::sharding_errors(spec.model, spec.training, spec.topology, spec.slice, spec.slices,
                                     spec.mesh);
}

namespace {

// Equal as the keys of a std::map compare them.
bool same_bytes(double a, double b) {
    return !(a < b) && !(b < a);
}

// Fills sim.plans and sim.plan_of_op from `memo`, the network plan of the same partitioned step at
// another batch, when that gives what planning afresh would: every op of a plan still has the same
// bytes as the other ops of that plan, and plans of one axis and kind still differ in bytes (so
// that the ops group into the same plans, first used by the same ops). Plans whose bytes changed
// are planned again. False (and nothing filled) otherwise. `same_links`: whether every plan crosses
// the links it crossed (and the contention classes are unchanged).
bool replan(NetworkMemo& memo, Simulation& sim, SimulationCache& cache, const SimulateOptions& options,
            bool& same_links) {
    const auto& ops = sim.program.ops;
    if (memo.plan_of_op.size() != ops.size()) return false;
    const std::size_t n = memo.slots.size();
    std::vector<double> bytes(n);
    std::vector<bool> seen(n, false);
    bool changed = false;
    for (const int i : memo.collective_ops) {
        const auto s = static_cast<std::size_t>(memo.plan_of_op[static_cast<std::size_t>(i)]);
        const double b = ops[static_cast<std::size_t>(i)].collective_bytes;
        if (!seen[s]) {
            seen[s] = true;
            bytes[s] = b;
            changed = changed || !same_bytes(b, memo.slots[s].bytes);
        } else if (!same_bytes(b, bytes[s])) {
            return false;
        }
    }
    if (changed) {
        for (std::size_t s = 0; s < n; ++s)
            for (std::size_t t = s + 1; t < n; ++t)
                if (memo.slots[s].comm_axis == memo.slots[t].comm_axis &&
                    memo.slots[s].kind == memo.slots[t].kind && same_bytes(bytes[s], bytes[t]))
                    return false;
    }
    same_links = true;
    for (std::size_t s = 0; s < n; ++s) {
        if (same_bytes(bytes[s], memo.slots[s].bytes)) continue;
        const auto& axis = sim.program.comm_axes[static_cast<std::size_t>(memo.slots[s].comm_axis)];
        std::shared_ptr<const CachedPlan> plan = cache.plan(
            sim.torus, static_cast<collectives::CollectiveKind>(memo.slots[s].kind), bytes[s], axis.parts,
            memo.hop_latency, memo.launch_overhead, memo.link_efficiency, options.link_bytes);
        same_links = same_links && plan->plan.links == memo.plans[s]->plan.links;
        memo.plans[s] = std::move(plan);
        memo.slots[s].bytes = bytes[s];
    }
    sim.plans = memo.plans;
    sim.plan_of_op = memo.plan_of_op;
    return true;
}

}  // namespace

// Lowers every ICI collective of the program onto the torus links. Collectives that are the same
// (kind, axis, bytes) share one plan: every layer's all-gather of an FSDP run is one plan. With a
// `memo` of the same partitioned step, the grouping is taken from there when the bytes allow.
scheduler::NetworkInput plan_network(const NetworkPlace& place, Simulation& sim, SimulationCache& cache,
                                     const SimulateOptions& options, NetworkMemo* memo) {
    scheduler::NetworkInput input;
    const auto& ops = sim.program.ops;
    bool any_ici = false;
    for (const auto& axis : sim.program.comm_axes)
        any_ici = any_ici || axis.kind == parallel::ResourceKind::ici;
    if (!any_ici) {
        sim.plan_of_op.assign(ops.size(), -1);
        return input;
    }
    sim.torus = cache.torus(place.topology, place.slice, place.twisted_torus);
    const double hop_latency = place.topology.ici.hop_latency * place.calibration.ici_hop_latency_factor;
    const double launch_overhead = place.calibration.collective_overhead;
    const double link_efficiency = place.calibration.ici_link_efficiency;
    const std::uint64_t generation = cache.plan_generation();
    // Without a kept step's memo, one for this config alone: the same steps fill it.
    NetworkMemo local;
    NetworkMemo& m = memo ? *memo : local;
    bool reused = false, same_links = false;
    if (m.valid && m.plan_generation == generation && m.torus == sim.torus.get() &&
        m.hop_latency == hop_latency && m.launch_overhead == launch_overhead &&
        m.link_efficiency == link_efficiency && m.link_bytes == options.link_bytes)
        reused = replan(m, sim, cache, options, same_links);
    if (!reused) {
        sim.plan_of_op.assign(ops.size(), -1);
        std::map<std::tuple<int, int, double>, int> index;
        m.collective_ops.clear();
        m.slots.clear();
        for (std::size_t i = 0; i < ops.size(); ++i) {
            const auto& op = ops[i];
            if (!parallel::is_collective(op.category)) continue;
            const auto& axis = sim.program.comm_axes[static_cast<std::size_t>(op.comm_axis)];
            if (axis.kind != parallel::ResourceKind::ici) continue;
            auto key = std::make_tuple(op.comm_axis, static_cast<int>(op.collective), op.collective_bytes);
            auto [it, inserted] = index.try_emplace(key, static_cast<int>(sim.plans.size()));
            if (inserted) {
                sim.plans.push_back(cache.plan(sim.torus, op.collective, op.collective_bytes, axis.parts,
                                               hop_latency, launch_overhead, link_efficiency,
                                               options.link_bytes));
                m.slots.push_back({op.comm_axis, static_cast<int>(op.collective), op.collective_bytes});
            }
            sim.plan_of_op[i] = it->second;
            m.collective_ops.push_back(static_cast<int>(i));
        }
    }
    input.plan_of_op.assign(ops.size(), nullptr);
    for (const int i : m.collective_ops) {
        const auto o = static_cast<std::size_t>(i);
        input.plan_of_op[o] = &sim.plans[static_cast<std::size_t>(sim.plan_of_op[o])]->plan;
    }
    input.link_bandwidth = &cache.link_bandwidth(sim.torus, link_efficiency);
    input.scratch = &cache.scratch(input.link_bandwidth->size());
    if (!reused || !same_links) {
        scheduler::ContentionClasses classes = scheduler::contention_classes(sim.program, input.plan_of_op);
        m.network_of_op = std::move(classes.network_of_op);
        m.alone = std::move(classes.alone);
    }
    if (!options.exact) {
        input.alone_of_op.assign(ops.size(), nullptr);
        for (const int i : m.collective_ops) {
            const auto o = static_cast<std::size_t>(i);
            if (m.alone[static_cast<std::size_t>(m.network_of_op[o])])
                input.alone_of_op[o] = &sim.plans[static_cast<std::size_t>(sim.plan_of_op[o])]->alone;
        }
    }
    if (!memo) {
        input.network_of_op = std::move(local.network_of_op);
        return input;
    }
    input.network_of_op = memo->network_of_op;
    if (!reused) {
        memo->plan_of_op = sim.plan_of_op;
        memo->plans = sim.plans;
        memo->torus = sim.torus.get();
        memo->hop_latency = hop_latency;
        memo->launch_overhead = launch_overhead;
        memo->link_efficiency = link_efficiency;
        memo->link_bytes = options.link_bytes;
    }
    // A plan dropped meanwhile may be planned again as another object: plan afresh next time.
    memo->valid = cache.plan_generation() == generation;
    memo->plan_generation = generation;
    return input;
}

Simulation simulate(const RunSpec& spec) {
    SimulationCache cache;
    return simulate(spec, cache);
}

namespace {

// Partitions, prices, plans and schedules the step: every stage before the memory profile.
// With `watch_microbatches`, the scheduler also watches the periods that certify folded
// microbatches (run/fold.hpp).
Simulation schedule_step(const RunSpec& spec, const parallel::RuntimeSpec& runtime,
                         const LoweredStep& lowered, std::vector<network::AxisMapping> mapping,
                         SimulationCache& cache, const SimulateOptions& options,
                         bool watch_microbatches = false) {
    Simulation sim;
    sim.mapping = std::move(mapping);
    sim.graph = lowered.graph;
    const parallel::PartitionInput partition_input{*sim.graph,
                                                   spec.training,
                                                   spec.mesh,
                                                   sim.mapping,
                                                   runtime,
                                                   lowered.names.get(),
                                                   spec.topology.chip.streaming_multiprocessors};
    // The full simulation partitions every config itself.
    const scheduler::Dependencies* dependencies = nullptr;  // the cache's, until its next partition()
    NetworkMemo* network_memo = nullptr;                    // alike
    if (options.exact) {
        sim.program = parallel::partition(partition_input);
    } else {
        PartitionedStep step = cache.partition(partition_input, sim.graph);
        sim.program = std::move(step.program);
        dependencies = step.dependencies;
        network_memo = step.network;
    }
    cost::CostModel model(cost::CostContext{spec.topology, runtime, spec.calibration, spec.training.dtype,
                                            spec.model.attention_dropout > 0.0, spec.slices});
    sim.costs = model.cost_all(sim.program);
    scheduler::NetworkInput network = plan_network(
        {spec.topology, spec.slice, spec.twisted_torus, spec.calibration}, sim, cache, options, network_memo);
    try {
        sim.timeline = scheduler::schedule(
            sim.program, sim.costs, runtime, sim.torus ? &network : nullptr,
            scheduler::ScheduleOptions{.jump_periods = !options.exact,
                                       .count_link_bytes = options.link_bytes,
                                       .reuse_rates = !options.exact,
                                       .watch = watch_microbatches ? microbatch_periods(sim.program)
                                                                   : std::vector<scheduler::PeriodicRegion>{},
                                       .dependencies = dependencies,
                                       .scratch = &cache.schedule_scratch()});
    } catch (const core::TimeOverflow& e) {
        core::Diagnostics d;
        d.error({spec.source, 0, 0}, "",
                fmt::format("cannot simulate this config: {}; one step would last longer than podsim "
                            "can represent (check sizes, bandwidths and runtime.host_overhead)",
                            e.what()));
        throw core::UserError(d);
    }
    return sim;
}

// The memory profile, host memory and report of a scheduled step; `fold` when it is a cut model.
// False (and nothing else done) when the fold's microbatch period's copies would not repeat its
// memory curve exactly (memory::FoldedPeak::outer_repeats).
// finish_step of a program with pipeline stages: each stage's memory profile; the report of the stage
// that computes longest, with the memory of the stage with the highest peak, the bubble, and the
// FLOPs of every stage.
void finish_stages(const RunSpec& spec, const parallel::RuntimeSpec& runtime, Simulation& sim,
                   const memory::HostMemory& host, double compile_s) {
    const double hbm = spec.topology.chip.device_hbm_bytes_limit();
    // With the activations each stage receives (held in memory, no time, not counted as ops).
    std::vector<StageView> views = stage_views(sim.program, sim.costs, sim.timeline, /*receives=*/true);
    const parallel::PipelineSchedule pp =
        parallel::pipeline_schedule(spec.training, spec.mesh, spec.model.layers);
    double activation_bytes = 0.0;  // one microbatch's stage input on a chip
    for (const auto& op : sim.program.ops)
        if (op.category == parallel::OpCategory::collective_permute && op.phase == workload::Phase::forward) {
            activation_bytes = op.collective_bytes;
            break;
        }
    add_pipeline_loop_buffers(views, pp, activation_bytes);
    std::vector<memory::MemoryProfile> profiles;
    int time_stage = 0, memory_stage = 0;
    core::Time most_compute = -1;
    for (int stage = 0; stage < sim.program.stages; ++stage) {
        const auto s = static_cast<std::size_t>(stage);
        profiles.push_back(memory::profile_memory(views[s].program, views[s].timeline, hbm));
        profiles.back().hbm_bytes = spec.topology.chip.device_hbm_capacity();
        core::Time compute = 0;
        for (const auto& span : views[s].timeline.spans)
            if (views[s].program.resources[static_cast<std::size_t>(span.resource)].kind ==
                parallel::ResourceKind::compute)
                compute += span.end - span.start;
        if (compute > most_compute) {
            most_compute = compute;
            time_stage = stage;
        }
        if (profiles.back().peak_bytes > profiles[static_cast<std::size_t>(memory_stage)].peak_bytes)
            memory_stage = stage;
    }
    auto report_of = [&](const StageView& v, const memory::MemoryProfile& memory) {
        return report::build_report(report::ReportInput{.name = spec.name,
                                                        .model = spec.model,
                                                        .training = spec.training,
                                                        .runtime = runtime,
                                                        .topology = spec.topology,
                                                        .slice = spec.slice,
                                                        .slices = spec.slices,
                                                        .mesh = spec.mesh,
                                                        .mfu_attention = spec.mfu_attention,
                                                        .program = v.program,
                                                        .costs = v.costs,
                                                        .timeline = v.timeline,
                                                        .memory = memory,
                                                        .host = host,
                                                        .compile_time_s = compile_s,
                                                        .pipeline_waits = &v.pipeline_waits});
    };
    // The time stage's breakdown, and the memory stage's memory.
    sim.report = report_of(views[static_cast<std::size_t>(time_stage)],
                           profiles[static_cast<std::size_t>(time_stage)]);
    const auto m = static_cast<std::size_t>(memory_stage);
    if (memory_stage != time_stage) sim.report.memory = report::memory_report(profiles[m], views[m].program);
    for (const auto& profile : profiles) sim.report.stage_peak_bytes.push_back(profile.peak_bytes);
    sim.memory = std::move(profiles[m]);
    // Every stage's matmuls, each on its share of the chips.
    double executed = 0.0;
    for (const auto& op : sim.program.ops) executed += op.flops;
    sim.report.hardware_flops_per_step =
        executed * static_cast<double>(sim.program.chips) / static_cast<double>(sim.program.stages);
    const double capacity =
        sim.report.step_time_s * static_cast<double>(sim.report.chips) * sim.report.peak_flops_per_chip;
    sim.report.hfu = capacity > 0 ? sim.report.hardware_flops_per_step / capacity : 0.0;
    sim.report.ops = static_cast<long>(sim.program.ops.size());
    sim.report.pipeline_stages = pp.stages;
    sim.report.pipeline_schedule = pp.circular() ? "circular" : "gpipe";
    sim.report.pipeline_microbatches = pp.microbatches;
    sim.report.pipeline_repeats = pp.repeats;
    sim.report.pipeline_bubble_closed_form = pp.bubble_fraction();
    sim.report.time_stage = time_stage;
    sim.report.memory_stage = memory_stage;
}

// Host RAM when the model is created, for a device holding `params_per_device_bytes` of parameters.
memory::HostMemory host_memory_at_creation(const RunSpec& spec, const parallel::RuntimeSpec& runtime,
                                           double params_per_device_bytes) {
    memory::HostMemoryInput host_in;
    host_in.total_params = static_cast<double>(workload::count_params(spec.model).total);
    host_in.param_bytes = static_cast<double>(core::dtype_bytes(spec.training.param_dtype));
    host_in.params_per_device_bytes = params_per_device_bytes;
    // A slice smaller than a host (a v4-8's 1x1x1 part, a one-core job on a v3-8) runs only its own
    // chips' and devices' processes there.
    host_in.chips_per_host =
        static_cast<int>(std::min<long>(spec.topology.host.chips_per_host, spec.slice.chips()));
    host_in.devices_per_chip =
        hardware::devices_per_chip_in_use(spec.topology, spec.slice, spec.mesh.ici_size());
    host_in.process_per_chip = runtime.process_per_chip();
    host_in.full_model_on_host = runtime.full_model_on_host();
    host_in.host_capacity = spec.topology.host.host_memory;
    return memory::host_memory(host_in);
}

bool finish_step(const RunSpec& spec, const parallel::RuntimeSpec& runtime, Simulation& sim,
                 const Fold* fold) {
    const double hbm = spec.topology.chip.device_hbm_bytes_limit();
    if (sim.program.stages > 1) {
        sim.host_memory = host_memory_at_creation(spec, runtime, sim.program.params_bytes);
        cost::CostModel model(cost::CostContext{spec.topology, runtime, spec.calibration, spec.training.dtype,
                                                spec.model.attention_dropout > 0.0, spec.slices});
        finish_stages(spec, runtime, sim, sim.host_memory, model.compile_seconds(sim.program));
        sim.report.prefetch_depth =
            runtime.async() &&
                    parallel::ici_axis_size(
                        spec.mesh,
                        parallel::kind_inserting(parallel::CollectiveRule::gather_parameters).kind) > 1
                ? runtime.prefetch_depth
                : 0;
        return true;
    }
    memory::FoldedPeak folded_peak;
    if (fold) {
        memory::MemoryFold memory_fold{fold->splices, fold->state.params, fold->state.grads,
                                       fold->state.optimizer,
                                       fold->microbatch ? &*fold->microbatch : nullptr};
        sim.memory = memory::profile_memory(sim.program, sim.timeline, hbm, &memory_fold, &folded_peak);
        if (!folded_peak.outer_repeats) return false;
    } else {
        sim.memory = memory::profile_memory(sim.program, sim.timeline, hbm);
    }
    sim.memory.hbm_bytes = spec.topology.chip.device_hbm_capacity();
    // Residuals offloaded to pinned host memory: those of a whole microbatch are there at once, when
    // its backward starts (a cut model's layers stand for the whole model's, alike).
    std::vector<double> offloaded(static_cast<std::size_t>(std::max(1, sim.program.microbatches)), 0.0);
    const double layer_scale =
        fold && fold->cut_layers > 0 ? static_cast<double>(fold->layers) / fold->cut_layers : 1.0;
    for (const auto& op : sim.program.ops) {
        if (op.offloaded && op.phase == workload::Phase::forward &&
            op.microbatch < static_cast<int>(offloaded.size()))
            offloaded[static_cast<std::size_t>(op.microbatch)] +=
                op.layer >= 0 ? layer_scale * op.saved_bytes : op.saved_bytes;
    }
    sim.memory.host_offload_bytes = *std::max_element(offloaded.begin(), offloaded.end());
    sim.host_memory =
        host_memory_at_creation(spec, runtime, fold ? fold->state.params : sim.program.params_bytes);
    cost::CostModel model(cost::CostContext{spec.topology, runtime, spec.calibration, spec.training.dtype,
                                            spec.model.attention_dropout > 0.0, spec.slices});
    double compile_s = model.compile_seconds(sim.program);
    if (fold && !runtime.compile_time)
        compile_s = spec.calibration.compile_time_base +
                    spec.calibration.compile_time_per_op * static_cast<double>(fold->ops);
    sim.report = report::build_report(
        report::ReportInput{spec.name, spec.model, spec.training, runtime, spec.topology, spec.slice,
                            spec.slices, spec.mesh, spec.mfu_attention, sim.program, sim.costs, sim.timeline,
                            sim.memory, sim.host_memory, compile_s, fold ? &fold->report_splices : nullptr});
    sim.report.prefetch_depth =
        runtime.async() &&
                parallel::ici_axis_size(
                    spec.mesh, parallel::kind_inserting(parallel::CollectiveRule::gather_parameters).kind) > 1
            ? runtime.prefetch_depth
            : 0;
    if (fold && sim.memory.peak_op >= 0)
        sim.report.memory.peak_op = folded_peak_name(sim, *fold, folded_peak);
    return true;
}

Simulation simulate_with(const RunSpec& spec, const parallel::RuntimeSpec& runtime,
                         const LoweredStep& lowered, std::vector<network::AxisMapping> mapping,
                         SimulationCache& cache, const SimulateOptions& options) {
    Simulation sim = schedule_step(spec, runtime, lowered, std::move(mapping), cache, options);
    (void)finish_step(spec, runtime, sim, nullptr);  // unfolded: always finished
    return sim;
}

}  // namespace

namespace {

// The folded simulation of `spec` at one prefetch depth, or nullopt when the cut model's schedule
// does not certify the fold.
std::optional<Simulation> simulate_folded(const RunSpec& spec, const RunSpec& cut,
                                          const parallel::RuntimeSpec& runtime, const LoweredStep& lowered,
                                          const std::vector<network::AxisMapping>& axes,
                                          SimulationCache& cache, const SimulateOptions& options,
                                          memory::LeastPeakFold* least) {
    const bool cut_microbatches = cut.training.microbatches != spec.training.microbatches;
    Simulation sim = schedule_step(cut, runtime, lowered, axes, cache, options, cut_microbatches);
    std::optional<Fold> fold = make_fold(spec, sim);
    if (!fold) return std::nullopt;
    if (!finish_step(spec, runtime, sim, &*fold)) return std::nullopt;
    sim.folded_layers = fold->cut_layers;
    sim.folded_microbatches = fold->cut_microbatches;
    if (least) {
        least->fixed = fold->state.params + fold->state.optimizer;
        least->grads = fold->state.grads;
        least->layer = fold->cut_layers / 2;
        least->extra = fold->layers - fold->cut_layers;
    }
    return sim;
}

bool foldable(const RunSpec& spec, const SimulateOptions& options, int layers_cut) {
    // A pipeline's stages are programs of their own, not periods of one: never folded; nor MoE
    // layers between dense ones, whose layers differ from their neighbours.
    return options.fold && !options.exact && !options.link_bytes && !spec.runtime.recompile_every_step &&
           spec.model.layers >= layers_cut + 2 && (!spec.model.is_moe() || spec.model.moe_layer_step == 1) &&
           !parallel::pipeline_schedule(spec.training, spec.mesh, spec.model.layers).pipelined();
}

}  // namespace

namespace {

Simulation simulate_unchecked(const RunSpec& spec, SimulationCache& cache, SimulateOptions options) {
    const auto& mapping = cache.mesh_axes(spec.topology, spec.slice, spec.mesh);
    if (const auto* error = std::get_if<std::string>(&mapping)) {
        core::Diagnostics d;
        d.error({spec.source, 0, 0}, "mesh", *error);
        throw core::UserError(d);
    }
    const auto& axes = std::get<std::vector<network::AxisMapping>>(mapping);
    // XLA's latency-hiding scheduler keeps the live bytes under a memory limit (SchedulerConfig::
    // memory_limit in xla/service/latency_hiding_scheduler.h): when prefetching the next groups'
    // gathered weights would not fit in HBM, it issues the all-gathers later. podsim lowers the
    // prefetch depth until the step fits, and reports the depth used; the gathers it no longer
    // hides show up as exposed communication.
    // No depth can fit when what every schedule holds already does not (the profile adds the same
    // terms in another order: a relative margin covers the rounding). That least peak is only worked
    // out for a step that does not fit.
    auto lower_prefetch = [&](Simulation sim, auto&& at_depth, auto&& least_peak) {
        if (sim.memory.fits) return sim;
        if (!options.exact && least_peak(sim.program) * (1.0 - 1e-9) > sim.memory.capacity_bytes) return sim;
        for (int depth = sim.report.prefetch_depth - 1; !sim.memory.fits && depth >= 0; --depth) {
            parallel::RuntimeSpec runtime = spec.runtime;
            runtime.prefetch_depth = depth;
            std::optional<Simulation> lower = at_depth(runtime);
            if (!lower) continue;
            if (!lower->memory.fits) continue;
            sim = std::move(*lower);
            sim.report.prefetch_limited_by_memory = true;
        }
        return sim;
    };
    // Folded: first with microbatches folded too (when there are enough), then layers only.
    const int microbatches_cut = cut_microbatches(spec.training.microbatches, spec.training.global_batch);
    const int layers_cut = cut_layers(spec.model.layers, !spec.runtime.async());
    for (const bool fold_microbatches : {true, false}) {
        if (!foldable(spec, options, layers_cut) || (fold_microbatches && microbatches_cut == 0)) continue;
        RunSpec cut = spec;
        cut.model.layers = layers_cut;
        if (fold_microbatches) {
            // The same microbatch: the cut step's batch is its microbatches' sequences.
            cut.training.global_batch =
                spec.training.global_batch / spec.training.microbatches * microbatches_cut;
            cut.training.microbatches = microbatches_cut;
        }
        LoweredStep lowered = cache.lowered(cut.model, cut.training);
        // An op over every layer's stacked values (lower.cpp: the grouped-query scores' relayout)
        // would be sized for the cut model's layers, and it is in no period the fold repeats: such
        // a step is simulated whole.
        const auto& cut_ops = lowered.graph->ops();
        if (std::any_of(cut_ops.begin(), cut_ops.end(),
                        [](const workload::Op& op) { return op.whole_layer_stack; }))
            break;
        memory::LeastPeakFold least;
        std::optional<Simulation> sim =
            simulate_folded(spec, cut, spec.runtime, lowered, axes, cache, options, &least);
        if (!sim) continue;
        bool certified = true;
        Simulation result = lower_prefetch(
            std::move(*sim),
            [&](const parallel::RuntimeSpec& runtime) {
                auto lower = simulate_folded(spec, cut, runtime, lowered, axes, cache, options, nullptr);
                certified = certified && lower.has_value();
                return lower;
            },
            [&](const parallel::DeviceProgram& program) {
                return memory::least_peak_bytes(program, &least);
            });
        if (certified) return result;
    }
    LoweredStep lowered = cache.lowered(spec.model, spec.training);
    Simulation sim = simulate_with(spec, spec.runtime, lowered, axes, cache, options);
    return lower_prefetch(
        std::move(sim),
        [&](const parallel::RuntimeSpec& runtime) -> std::optional<Simulation> {
            return simulate_with(spec, runtime, lowered, axes, cache, options);
        },
        [](const parallel::DeviceProgram& program) {
            // One stage's least peak is not the program's: the retries decide.
            return program.stages > 1 ? 0.0 : memory::least_peak_bytes(program);
        });
}

}  // namespace

Simulation simulate(const RunSpec& spec, SimulationCache& cache, SimulateOptions options) {
    try {
        return simulate_unchecked(spec, cache, options);
    } catch (const core::TimeOverflow& e) {
        // Anywhere in the pipeline: planning a collective on a link of 1e-300 Gb/s, scheduling.
        core::Diagnostics d;
        d.error({spec.source, 0, 0}, "",
                fmt::format("cannot simulate this config: {}; one step would last longer than podsim "
                            "can represent (check sizes, bandwidths and runtime.host_overhead)",
                            e.what()));
        throw core::UserError(d);
    }
}

}  // namespace podsim::run
