#include "training_run/programs.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "core/assert.hpp"
#include "core/diagnostics.hpp"
#include "core/time.hpp"
#include "parallel/parallelism.hpp"
#include "parallel/pipeline_schedule.hpp"

namespace podsim::training_run {

int parameter_tensors(const run::RunSpec& spec) {
    const auto& m = spec.model;
    // Per layer: q, k, v, output projections, the MLP's two (gated: three) matrices, two norms;
    // each with a bias when the model has biases (norms then have a shift).
    const int matrices = 4 + (m.gated() ? 3 : 2) + 2;
    const int per_layer = matrices * (m.bias ? 2 : 1);
    // Token (or patch) embedding, positions, final norm, and an untied head or classifier.
    int outside = 1 + (m.position == workload::PositionEmbedding::learned ? 1 : 0) + (m.bias ? 2 : 1);
    if (!m.tied_embeddings || m.is_vit()) outside += m.bias ? 2 : 1;
    return m.layers * per_layer + outside;
}

int optimizer_state_per_parameter(const run::RunSpec& spec) {
    int states = 0;
    switch (spec.training.optimizer) {
        case workload::Optimizer::adam:
        case workload::Optimizer::adamw:
        case workload::Optimizer::adafactor:
            states = 2;
            break;
        case workload::Optimizer::sgd:
            states = 1;
            break;
    }
    if (spec.training.master_dtype) ++states;
    return states;
}

ProgramLibrary::ProgramLibrary(const run::RunSpec& base, const RunPlan& plan) : base_(base), plan_(plan) {
    // The host is simulated by the whole run; the device program carries none.
    base_.runtime.host_overhead = 0.0;
    base_.runtime.recompile_every_step = false;
}

const ProgramLibrary::StepShape& ProgramLibrary::step(int seq_len, long batch) {
    auto key = std::make_pair(seq_len, batch);
    auto it = steps_.find(key);
    if (it != steps_.end()) return it->second;
    run::RunSpec spec = base_;
    if (!spec.model.is_vit() && seq_len > 0) spec.training.seq_len = seq_len;
    // A batch the data-parallel axes cannot split evenly is padded up to one they can, as SPMD
    // frameworks pad a last partial batch; with pipeline stages, into each of the pipeline's
    // microbatches.
    const long shards = parallel::divisor(spec.mesh, workload::Shard::batch) * spec.training.microbatches *
                        parallel::pipeline_schedule(spec.training, spec.mesh, spec.model.layers).microbatches;
    spec.training.global_batch = std::max(shards, (batch + shards - 1) / shards * shards);
    const run::Simulation sim = run::simulate(spec);
    StepShape shape;
    shape.step_time = sim.timeline.step_time;
    core::Time first = std::numeric_limits<core::Time>::max(), last = 0;
    for (std::size_t i = 0; i < sim.program.ops.size(); ++i) {
        const auto& op = sim.program.ops[i];
        if (op.category == parallel::OpCategory::host) continue;
        ++shape.ops;
        if (op.phase != workload::Phase::forward) continue;
        first = std::min(first, sim.timeline.spans[i].start);
        last = std::max(last, sim.timeline.spans[i].end);
        ++shape.forward_ops;
    }
    if (shape.forward_ops > 0) shape.forward_span = last - first;
    return steps_.emplace(key, shape).first->second;
}

const Program& ProgramLibrary::get(const ProgramKey& key) {
    auto it = programs_.find(key);
    if (it != programs_.end()) return it->second;
    if (programs_.size() >= config::kMaxWholeRunPrograms) {
        core::Diagnostics d;
        d.error(plan_.location.at, "whole_run",
                fmt::format("the run has more than {} distinct programs (shapes, accumulated evaluation "
                            "results, parts of split graphs): more than podsim simulates in one run",
                            config::kMaxWholeRunPrograms));
        throw core::UserError(d);
    }
    const StepShape& shape = step(key.seq_len, key.batch);
    const auto& cal = base_.calibration;
    const int params = parameter_tensors(base_);
    const int states = optimizer_state_per_parameter(base_);
    Program p;
    p.key = key;
    double compile_per_op_s = cal.compile_time_per_op;
    double compile_base_s = cal.compile_time_base;
    if (key.kind == ProgramKind::train) {
        p.device_time = shape.step_time;
        p.ops = shape.ops;
        // Synced at the step's end: parameters, gradients, optimizer state, the loss.
        p.tensors = params * (2 + states) + 1;
        p.arguments = params * (1 + states) + 2;
    } else {
        // Forward only: the forward part of the simulated step's timeline.
        PODSIM_ASSERT(shape.forward_ops > 0, "a step without forward ops");
        p.ops = shape.forward_ops;
        p.device_time = shape.forward_span;
        p.tensors = plan_.eval.accumulated_tensors + 1;
        p.arguments = params + 2;
        if (key.accumulated_rows > 0) {
            // torch.cat of the rows so far with this step's: reads and writes them all.
            const double bytes = 2.0 * static_cast<double>(key.accumulated_rows + key.batch) *
                                 plan_.eval.accumulated_bytes_per_sample * plan_.eval.accumulated_tensors;
            p.device_time = core::add_times(
                p.device_time,
                core::from_seconds(bytes / (base_.topology.chip.device_hbm_bandwidth() * cal.hbm_efficiency) +
                                   cal.op_overhead * plan_.eval.accumulated_tensors));
            p.ops += plan_.eval.accumulated_tensors;
        }
    }
    const int parts = plan_.unlowered_ops + 1;
    if (parts > 1) {
        // A split graph: each part is its own program; earlier parts sync the unlowered op's input.
        p.device_time /= parts;
        p.ops = std::max(1, p.ops / parts);
        if (key.part + 1 < parts) p.tensors = 1;
    }
    p.device_s = core::to_seconds(p.device_time);
    if (base_.runtime.compile_time) {
        p.compile_s = *base_.runtime.compile_time;
    } else {
        p.compile_s = compile_base_s + compile_per_op_s * p.ops;
    }
    const char* kind = key.kind == ProgramKind::train ? "train" : "eval";
    p.name = fmt::format("{}[seq {} batch {}", kind, key.seq_len, key.batch);
    if (key.accumulated_rows > 0) p.name += fmt::format(" acc {}", key.accumulated_rows);
    if (parts > 1) p.name += fmt::format(" part {}/{}", key.part + 1, parts);
    p.name += "]";
    return programs_.emplace(key, std::move(p)).first->second;
}

}  // namespace podsim::training_run
