#include "parallel/partition.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <string_view>

#include <fmt/format.h>

#include "core/assert.hpp"
#include "core/dtype.hpp"
#include "parallel/parallelism.hpp"
#include "parallel/pipeline_schedule.hpp"
#include "parallel/xla_gpu_split_k.hpp"
#include "workload/lower.hpp"

namespace podsim::parallel {
namespace {

using collectives::CollectiveKind;
using workload::Op;
using workload::OpKind;
using workload::Phase;
using workload::Shard;
using workload::Tensor;

enum class Block { forward, backward };

Block block_of(Phase phase) {
    return phase == Phase::forward ? Block::forward : Block::backward;
}

class Partitioner {
  public:
    explicit Partitioner(const PartitionInput& in) : in_(in), g_(in.graph) {
        if (in.names != nullptr) {
            PODSIM_ASSERT(&in.names->graph() == &in.graph, "names of another graph");
            names_ = in.names;
        } else {
            own_names_ = std::make_unique<ProgramNames>(in.graph);
            names_ = own_names_.get();
        }
        // The axes whose collectives the partitioner inserts, and what each kind splits: read from the
        // parallelism declarations (parallel/parallelism.hpp).
        fsdp_ = axis_size(in.mesh, gathering_.kind);
        tensor_ = axis_size(in.mesh, reducing_.kind);
        preds_ = g_.predecessor_lists();
        for (std::size_t role = 0; role < divisor_.size(); ++role)
            divisor_[role] = static_cast<double>(parallel::divisor(in.mesh, static_cast<Shard>(role)));
        PODSIM_ASSERT(
            in.training.microbatches > 0 && in.training.global_batch % in.training.microbatches == 0,
            "microbatches must divide the batch (validated by config)");
        samples_ = in.training.global_batch / in.training.microbatches;
        pipeline_ = pipeline_schedule(in.training, in.mesh, g_.layers);
        if (pipeline_.pipelined()) {
            // A pipeline microbatch's layers see its share of the batch; the parts outside the
            // pipeline run on every stage for the stage's share (the stage axis splits their batch).
            samples_ = in.training.global_batch / pipeline_.microbatches;
            outer_samples_ = in.training.global_batch / pipeline_.stages;
        }
        param_bytes_ = static_cast<double>(core::dtype_bytes(in.training.param_dtype));
        // Every framework casts a parameter shard to the compute dtype before the all-gather, so FSDP
        // gathers move compute-dtype weights and the gradient reduce-scatter compute-dtype gradients:
        // JAX because the convert is elementwise on the shard and GSPMD inserts the gather after it
        // (MaxText layers/linears.py: `kernel = jnp.asarray(kernel, self.dtype)`; PyTorch/XLA SPMD is
        // partitioned the same way); PyTorch/XLA FSDP because `_rebuild_full_params` converts the
        // shard to `compute_dtype` before `all_gather`, and reduce-scatters gradients in it unless
        // `fp32_reduce_scatter` (torch_xla/distributed/fsdp/xla_fully_sharded_data_parallel.py).
        fsdp_bytes_ = static_cast<double>(core::dtype_bytes(in.training.dtype));
        reduce_scatter_bytes_ = in.runtime.fp32_reduce_scatter
                                    ? static_cast<double>(core::dtype_bytes(core::DType::fp32))
                                    : fsdp_bytes_;
    }

    // With `sizing`, also records how each op is sized (resize).
    DeviceProgram run(std::vector<OpSizing>* sizing = nullptr) {
        sizing_ = sizing;
        p_.chips = in_.mesh.ici_size() * in_.mesh.dcn_size();
        p_.microbatches = in_.training.microbatches;
        make_resources();
        fsdp_axis_ = axis(gathering_);
        tensor_axis_ = axis(reducing_);
        data_axis_ = axis(kind_inserting(CollectiveRule::all_reduce_gradients));
        make_state();
        if (pipeline_.pipelined()) return run_pipelined();

        const std::vector<int>& order = g_.topological_order();
        // Every op of the graph once per microbatch, plus its collectives and copies: reserved so
        // that emitting does not move the ops already emitted.
        p_.ops.reserve(g_.size() * static_cast<std::size_t>(std::max(1, in_.training.microbatches)) * 2 + 64);
        std::vector<int> step_ops;
        std::vector<int> optimizer_ops;
        for (int i : order) (g_.op(i).phase == Phase::optimizer ? optimizer_ops : step_ops).push_back(i);
        if (in_.runtime.async()) reduce_first(step_ops);
        plan_groups(step_ops);
        // A graph op's compute op is the same in every microbatch but for the microbatch index.
        compute_ops_.reserve(g_.size());
        for (std::size_t i = 0; i < g_.size(); ++i) compute_ops_.push_back(compute_op(static_cast<int>(i)));

        const int host = static_cast<int>(p_.resources.size()) - 1;
        DeviceOp dispatch;
        dispatch.name = "host.dispatch";
        dispatch.category = OpCategory::host;
        dispatch.resource = host;
        host_op_ = emit(std::move(dispatch));

        std::vector<int> final_grad(g_.param_groups.size(), -1);
        for (int mb = 0; mb < in_.training.microbatches; ++mb) {
            emit_microbatch(step_ops, mb, mb + 1 == in_.training.microbatches, final_grad);
        }
        // Without DCN overlap the cross-slice reductions start when the backward has finished: each
        // group's just before its update (the DCN runs them in program order), which keeps the
        // updates' blocks alike from one layer to the next.
        std::vector<int> deferred(g_.param_groups.size(), -1);
        for (std::size_t k = 0; k < deferred_dcn_.size(); ++k)
            deferred[static_cast<std::size_t>(deferred_dcn_[k].group)] = static_cast<int>(k);
        auto reduce_deferred = [&](int group) {
            int& k = deferred[static_cast<std::size_t>(group)];
            if (k < 0) return;
            const DeferredReduce& d = deferred_dcn_[static_cast<std::size_t>(k)];
            final_grad[static_cast<std::size_t>(group)] =
                reduce_over_slices(d.group, d.after, d.microbatch, d.data_axis, d.shard);
            k = -1;
        };
        for (int i : optimizer_ops) {
            const Op& op = g_.op(i);
            if (op.param_group >= 0) reduce_deferred(op.param_group);
            DeviceOp d = compute_ops_[static_cast<std::size_t>(i)];
            int group = op.param_group;
            if (group >= 0 && final_grad[static_cast<std::size_t>(group)] >= 0) {
                d.deps.push_back(final_grad[static_cast<std::size_t>(group)]);
            }
            emit(std::move(d), {.rule = OpSizing::Rule::compute, .ref = i});
        }
        for (std::size_t g = 0; g < deferred.size(); ++g) reduce_deferred(static_cast<int>(g));
        p_.names = names_->store();
        return std::move(p_);
    }

    // With pipeline stages: one program per stage (DeviceProgram), emitted in the order of MaxText's
    // pipeline iterations so that every op follows what it waits for. Each stage runs the part outside
    // the pipeline for its share of the batch (embedding forward; head and loss; embedding backward),
    // and between them its chunks of layers, one microbatch at a time: the forwards in the order
    // pipeline_schedule.hpp gives, then the backwards in reverse. A chunk's input comes from the stage
    // before it (its gradient from the stage after) by collective-permute (staged_ready).
    DeviceProgram run_pipelined() {
        const PipelineSchedule& pp = pipeline_;
        p_.stages = pp.stages;
        p_.microbatches = pp.microbatches;
        const ParallelismKind& staging = kind_inserting(CollectiveRule::pass_activations);
        stage_axis_ = axis(staging);
        if (stage_axis_ < 0) stage_axis_ = axis("dcn:" + std::string(staging.name));
        PODSIM_ASSERT(stage_axis_ >= 0, "a pipeline without a stage axis");
        // A stage holds its own layers and a copy of the parts outside the pipeline.
        for (int stage = 0; stage < pp.stages; ++stage) {
            std::vector<const workload::ParamGroup*> groups;
            for (const auto& group : g_.param_groups)
                if (group.layer < 0 || pp.stage_of_layer(group.layer) == stage) groups.push_back(&group);
            const StateBytes state = state_bytes(groups, in_.training, in_.mesh);
            p_.stage_state.push_back({state.params, state.grads, state.optimizer});
        }
        p_.params_bytes = p_.stage_state[0].params_bytes;
        p_.grads_bytes = p_.stage_state[0].grads_bytes;
        p_.optimizer_bytes = p_.stage_state[0].optimizer_bytes;

        // Sections: the parts outside the pipeline (before, between and after the layers) and each
        // chunk's forward and backward ops, in program order.
        const std::vector<int>& order = g_.topological_order();
        const int chunks = g_.layers / pp.layers_per_stage;
        std::vector<int> pre, mid, post, optimizer_ops;
        std::vector<std::vector<int>> chunk_fwd(static_cast<std::size_t>(chunks)),
            chunk_bwd(static_cast<std::size_t>(chunks));
        bool layers_seen = false, backward_seen = false;
        for (int i : order) {
            const Op& op = g_.op(i);
            // Each stage scans its own layers; a copy of all the layers' stacks has no place there
            // (what a stage's loop relays out is not modelled).
            if (op.whole_layer_stack) continue;
            if (op.phase == Phase::optimizer) {
                optimizer_ops.push_back(i);
            } else if (op.layer >= 0) {
                const auto c = static_cast<std::size_t>(pp.chunk_of_layer(op.layer));
                (op.phase == Phase::forward ? chunk_fwd : chunk_bwd)[c].push_back(i);
                layers_seen = true;
                backward_seen = backward_seen || op.phase != Phase::forward;
            } else {
                (!layers_seen ? pre : !backward_seen ? mid : post).push_back(i);
            }
        }
        auto plan_of = [&](const std::vector<int>& ops) {
            std::array<BlockPlan, 2> plans;
            plan_section(ops, plans.data());
            return plans;
        };
        std::vector<std::array<BlockPlan, 2>> fwd_plans, bwd_plans;
        for (int c = 0; c < chunks; ++c) {
            fwd_plans.push_back(plan_of(chunk_fwd[static_cast<std::size_t>(c)]));
            bwd_plans.push_back(plan_of(chunk_bwd[static_cast<std::size_t>(c)]));
        }
        const auto pre_plans = plan_of(pre), mid_plans = plan_of(mid), post_plans = plan_of(post);
        // A tied embedding's gradients complete after the embedding's backward, not the LM head's.
        std::vector<char> finishing_mid(g_.param_groups.size(), 1);
        for (int i : post)
            if (g_.op(i).param_group >= 0) finishing_mid[static_cast<std::size_t>(g_.op(i).param_group)] = 0;
        compute_ops_.reserve(g_.size());
        for (std::size_t i = 0; i < g_.size(); ++i) compute_ops_.push_back(compute_op(static_cast<int>(i)));
        p_.ops.reserve(g_.size() * static_cast<std::size_t>(pp.microbatches) * 3 +
                       static_cast<std::size_t>(pp.stages) * (pre.size() + mid.size() + post.size()) * 4 +
                       64);

        const auto stages = static_cast<std::size_t>(pp.stages);
        ready_mb_.assign(static_cast<std::size_t>(pp.microbatches), std::vector<int>(g_.size(), -1));
        ready_outer_.assign(stages, std::vector<int>(g_.size(), -1));
        std::vector<std::vector<int>> final_grad(stages, std::vector<int>(g_.param_groups.size(), -1));
        std::vector<int> last_compute(stages, -1), host_ops(stages, -1);
        auto enter = [&](int stage) {
            stage_ = stage;
            last_compute_ = last_compute[static_cast<std::size_t>(stage)];
            host_op_ = host_ops[static_cast<std::size_t>(stage)];
        };
        auto leave = [&] {
            last_compute[static_cast<std::size_t>(stage_)] = last_compute_;
            stage_ = 0;
        };
        const bool per_repeat = in_.training.pipeline_fsdp_ag_per_repeat;
        const bool once = in_.training.pipeline_fsdp_ag_once;

        // Before the pipeline: the host's dispatch, the embedding, and with pipeline_fsdp_ag_once every
        // layer group of the stage gathered for the whole step.
        for (int stage = 0; stage < pp.stages; ++stage) {
            enter(stage);
            DeviceOp dispatch;
            dispatch.name = "host.dispatch";
            dispatch.category = OpCategory::host;
            dispatch.resource = static_cast<int>(resources_per_stage_) - 1;
            host_op_ = host_ops[static_cast<std::size_t>(stage)] = emit(std::move(dispatch));
            emit_section(Section{.ops = pre,
                                 .plans = pre_plans.data(),
                                 .last_microbatch = true,
                                 .ready = &ready_outer_[static_cast<std::size_t>(stage)]},
                         final_grad[static_cast<std::size_t>(stage)]);
            if (once) gather_stage_once(stage);
            leave();
        }
        const int real = pp.microbatches * pp.repeats;
        for (int t = 0; t < pp.iterations(); ++t) {
            for (int stage = 0; stage < pp.stages; ++stage) {
                const int processed = t - stage;
                if (processed < 0 || processed >= real) continue;
                const int mb = processed % pp.microbatches;
                const auto c = static_cast<std::size_t>((processed / pp.microbatches) * pp.stages + stage);
                enter(stage);
                emit_section(Section{.ops = chunk_fwd[c],
                                     .plans = fwd_plans[c].data(),
                                     .mb = mb,
                                     .gathers = !once && (!per_repeat || mb == 0),
                                     .waits_for_host = false,
                                     .ready = &ready_mb_[static_cast<std::size_t>(mb)],
                                     .gather_last_mb = per_repeat ? pp.microbatches - 1 : -1},
                             final_grad[static_cast<std::size_t>(stage)]);
                leave();
            }
        }
        for (int stage = 0; stage < pp.stages; ++stage) {
            enter(stage);
            emit_section(Section{.ops = mid,
                                 .plans = mid_plans.data(),
                                 .last_microbatch = true,
                                 .waits_for_host = false,
                                 .ready = &ready_outer_[static_cast<std::size_t>(stage)],
                                 .finishing = &finishing_mid},
                         final_grad[static_cast<std::size_t>(stage)]);
            leave();
        }
        for (int t = pp.iterations() - 1; t >= 0; --t) {
            for (int stage = pp.stages - 1; stage >= 0; --stage) {
                const int processed = t - stage;
                if (processed < 0 || processed >= real) continue;
                const int mb = processed % pp.microbatches;
                const auto c = static_cast<std::size_t>((processed / pp.microbatches) * pp.stages + stage);
                enter(stage);
                // Backwards run microbatches in reverse: the chunk's last one is microbatch 0.
                emit_section(Section{.ops = chunk_bwd[c],
                                     .plans = bwd_plans[c].data(),
                                     .mb = mb,
                                     .last_microbatch = mb == 0,
                                     .gathers = !once && (!per_repeat || mb == pp.microbatches - 1),
                                     .reduces = !(once || per_repeat) || mb == 0,
                                     .waits_for_host = false,
                                     .ready = &ready_mb_[static_cast<std::size_t>(mb)],
                                     .gather_last_mb = per_repeat ? 0 : -1,
                                     .gather_last_phase = Phase::backward},
                             final_grad[static_cast<std::size_t>(stage)]);
                leave();
            }
        }
        for (int stage = 0; stage < pp.stages; ++stage) {
            enter(stage);
            emit_section(Section{.ops = post,
                                 .plans = post_plans.data(),
                                 .last_microbatch = true,
                                 .waits_for_host = false,
                                 .ready = &ready_outer_[static_cast<std::size_t>(stage)]},
                         final_grad[static_cast<std::size_t>(stage)]);
            leave();
        }
        // Each stage updates its own layers and its copy of the parts outside the pipeline.
        for (int stage = 0; stage < pp.stages; ++stage) {
            enter(stage);
            for (int i : optimizer_ops) {
                const Op& op = g_.op(i);
                if (op.layer >= 0 && pp.stage_of_layer(op.layer) != stage) continue;
                DeviceOp d = compute_ops_[static_cast<std::size_t>(i)];
                const int group = op.param_group;
                const auto& grads = final_grad[static_cast<std::size_t>(stage)];
                if (group >= 0 && grads[static_cast<std::size_t>(group)] >= 0)
                    d.deps.push_back(grads[static_cast<std::size_t>(group)]);
                emit(std::move(d), {.rule = OpSizing::Rule::compute, .ref = i});
            }
            leave();
        }
        p_.names = names_->store();
        return std::move(p_);
    }

    // The device op holding graph op `pred`'s output for an op of microbatch `mb` on the stage being
    // emitted: a chunk reads its own microbatch's, a part outside the pipeline the last microbatch to
    // produce it. From another stage it arrives by collective-permute, sent once per op and stage.
    int staged_ready(int pred, int mb, bool outside_pipeline) {
        const auto p = static_cast<std::size_t>(pred);
        int r = -1;
        if (g_.op(pred).layer < 0) {
            r = ready_outer_[static_cast<std::size_t>(stage_)][p];
        } else if (!outside_pipeline) {
            r = ready_mb_[static_cast<std::size_t>(mb)][p];
        } else {
            for (const auto& ready : ready_mb_) r = std::max(r, ready[p]);
        }
        if (r < 0) return r;
        const int from =
            p_.resources[static_cast<std::size_t>(p_.ops[static_cast<std::size_t>(r)].resource)].stage;
        if (from == stage_) return r;
        const auto key = std::make_pair(r, stage_);
        if (auto it = permutes_.find(key); it != permutes_.end()) return it->second;
        const int to = stage_;
        stage_ = from;  // the sender's link
        const DeviceOp& source = p_.ops[static_cast<std::size_t>(r)];
        DeviceOp permute =
            collective(op_name(pred, OpSuffix::collective_permute), CollectiveKind::collective_permute,
                       stage_axis_, source.output_bytes, source.phase, source.layer, source.microbatch);
        permute.deps.push_back(r);
        const int index = emit(std::move(permute), {.rule = OpSizing::Rule::collective_output, .ref = r});
        stage_ = to;
        permutes_.emplace(key, index);
        return index;
    }

    // pipeline_fsdp_ag_once: every layer group of the stage gathered before its first microbatch and
    // kept until its last backward op (the last microbatch of the backward is microbatch 0: the
    // gather is marked as of that pass and microbatch, which memory/memory_profile.cpp frees it after).
    void gather_stage_once(int stage) {
        const int fsdp_axis = fsdp_axis_;
        if (fsdp_axis < 0) return;
        if (gather_.empty()) gather_.assign(2 * g_.param_groups.size(), -1);
        for (std::size_t group = 0; group < g_.param_groups.size(); ++group) {
            const auto& pg = g_.param_groups[group];
            if (pg.layer < 0 || pipeline_.stage_of_layer(pg.layer) != stage) continue;
            DeviceOp ag = collective(group_name(static_cast<int>(group), GroupSuffix::all_gather_fwd),
                                     CollectiveKind::all_gather, fsdp_axis, gathered_bytes(pg),
                                     Phase::backward, pg.layer, 0);
            ag.param_group = static_cast<int>(group);
            if (last_compute_ >= 0) ag.deps.push_back(last_compute_);
            const int index = emit(std::move(ag));
            gather_[group] = gather_[g_.param_groups.size() + group] = index;
        }
    }

    void to_stage(DeviceOp& op) const {
        op.resource += stage_ * static_cast<int>(resources_per_stage_);
        if (op.comm_axis >= 0) op.comm_axis += stage_ * static_cast<int>(axes_per_stage_);
    }

    void resize(DeviceProgram& program, const std::vector<OpSizing>& sizing) {
        PODSIM_ASSERT(sizing.size() == program.ops.size(), "sizing of another program");
        std::vector<OpSizes> sizes;  // by graph op, of its compute op
        sizes.reserve(g_.size());
        for (const Op& op : g_.ops()) sizes.push_back(sizes_of(op));
        for (std::size_t i = 0; i < program.ops.size(); ++i) {
            DeviceOp& op = program.ops[i];
            const OpSizing& rule = sizing[i];
            const auto ref = static_cast<std::size_t>(rule.ref);
            switch (rule.rule) {
                case OpSizing::Rule::fixed:
                    break;
                case OpSizing::Rule::compute:
                    size_as(op, sizes[ref]);
                    break;
                case OpSizing::Rule::part:
                    // As part_of.
                    size_as(op, sizes[ref]);
                    op.flops *= rule.fraction;
                    op.bytes *= rule.fraction;
                    op.flop_scale *= rule.fraction;
                    if (rule.zero_output) holds_no_output(op);
                    break;
                case OpSizing::Rule::collective_input:
                    op.collective_bytes =
                        bytes(g_.op(rule.ref).reads[0], samples_of(g_.op(rule.ref))) * rule.fraction;
                    break;
                case OpSizing::Rule::collective_output: {
                    DeviceOp& source = program.ops[ref];
                    op.collective_bytes = source.output_bytes;
                    if (rule.divide_source) split_output(source);
                    break;
                }
                case OpSizing::Rule::copy:
                    op.bytes = program.ops[ref].saved_bytes;
                    break;
            }
        }
    }

  private:
    // A device op's sizes (DeviceOp's fields of the same names and defaults).
    struct OpSizes {
        double flops = 0.0, bytes = 0.0, output_bytes = 0.0, saved_bytes = 0.0;
        double mm_batch = 1.0, mm_m = 0.0, mm_n = 0.0, mm_k = 0.0;
        double flop_scale = 1.0;
        double split_k_bytes = 0.0;
    };

    // A part of a split op that holds none of its output, residuals or split-K partials (the op's
    // other part holds them).
    static void holds_no_output(DeviceOp& op) {
        op.output_bytes = 0.0;
        op.kept_for_backward = false;
        op.saved_bytes = 0.0;
        op.split_k_bytes = 0.0;
        op.output_saved = false;
    }

    // A sequence-parallel reduce-scatter leaves the op's output (and the saved copy of it) split.
    void split_output(DeviceOp& op) const {
        const double split = op.output_bytes / static_cast<double>(tensor_);
        if (op.output_saved) op.saved_bytes -= op.output_bytes - split;
        op.output_bytes = split;
    }

    static void size_as(DeviceOp& op, const OpSizes& compute) {
        op.flops = compute.flops;
        op.bytes = compute.bytes;
        op.output_bytes = compute.output_bytes;
        op.saved_bytes = compute.saved_bytes;
        op.mm_batch = compute.mm_batch;
        op.mm_m = compute.mm_m;
        op.mm_n = compute.mm_n;
        op.mm_k = compute.mm_k;
        op.flop_scale = compute.flop_scale;
        op.split_k_bytes = compute.split_k_bytes;
    }

    void make_resources() {
        p_.resources.push_back(Resource{"compute", ResourceKind::compute, -1});
        for (std::size_t a = 0; a < in_.mesh.ici.size(); ++a) {
            const auto& axis = in_.mesh.ici[a];
            if (axis.size <= 1) continue;
            CommAxis comm{axis.name, ResourceKind::ici, axis.size, in_.ici_axes[a].parts};
            axis_index_[axis.name] = static_cast<int>(p_.comm_axes.size());
            p_.resources.push_back(
                Resource{"ici:" + axis.name, ResourceKind::ici, static_cast<int>(p_.comm_axes.size())});
            p_.comm_axes.push_back(comm);
        }
        if (in_.mesh.dcn_size() > 1) {
            // The data-parallel slices ("dcn"), then every other kind that runs across slices
            // ("dcn:<name>").
            const ParallelismKind& data = kind_inserting(CollectiveRule::all_reduce_gradients);
            long dcn_data = in_.mesh.dcn_size();
            for (const auto& kind : kParallelisms)
                if (&kind != &data) dcn_data /= in_.mesh.dcn_size_of(std::string(kind.name));
            if (dcn_data > 1) {
                dcn_axis_ = static_cast<int>(p_.comm_axes.size());
                p_.resources.push_back(Resource{"dcn", ResourceKind::dcn, dcn_axis_});
                p_.comm_axes.push_back(CommAxis{"dcn", ResourceKind::dcn, static_cast<int>(dcn_data), {}});
            }
            for (const auto& kind : kParallelisms) {
                const long size = in_.mesh.dcn_size_of(std::string(kind.name));
                if (&kind == &data || size <= 1) continue;
                const std::string name = "dcn:" + std::string(kind.name);
                axis_index_[name] = static_cast<int>(p_.comm_axes.size());
                p_.resources.push_back(
                    Resource{name, ResourceKind::dcn, static_cast<int>(p_.comm_axes.size())});
                p_.comm_axes.push_back(CommAxis{name, ResourceKind::dcn, static_cast<int>(size), {}});
            }
        }
        const ParallelismKind& exchanging = kind_inserting(CollectiveRule::exchange_tokens);
        expert_axis_ = axis(exchanging);
        if (expert_axis_ < 0) expert_axis_ = axis("dcn:" + std::string(exchanging.name));
        // Remat offload moves saved activations over the chip's host link, a resource of its own.
        bool offloads = false;
        for (const auto& op : g_.ops()) offloads = offloads || op.offloaded;
        if (offloads) {
            transfer_resource_ = static_cast<int>(p_.resources.size());
            p_.resources.push_back(Resource{"host-transfer", ResourceKind::host_transfer, -1});
        }
        p_.resources.push_back(Resource{"host", ResourceKind::host, -1});
        if (!pipeline_.pipelined()) return;
        // One copy of every resource and comm axis per stage, named after it; ops are emitted with
        // stage-local indices and moved to their stage's copies (emit).
        resources_per_stage_ = p_.resources.size();
        axes_per_stage_ = p_.comm_axes.size();
        const std::vector<Resource> local = p_.resources;
        const std::vector<CommAxis> local_axes = p_.comm_axes;
        p_.resources.clear();
        p_.comm_axes.clear();
        for (int stage = 0; stage < pipeline_.stages; ++stage) {
            for (Resource r : local) {
                r.name = fmt::format("stage{}:{}", stage, r.name);
                r.stage = stage;
                if (r.comm_axis >= 0) r.comm_axis += stage * static_cast<int>(axes_per_stage_);
                p_.resources.push_back(std::move(r));
            }
            for (CommAxis a : local_axes) {
                a.stage = stage;
                p_.comm_axes.push_back(std::move(a));
            }
        }
    }

    // The comm axis of kind `kind` in this program, or -1 when its axis has size 1.
    int axis(const ParallelismKind& kind) const { return axis(std::string(kind.name)); }

    std::string_view op_name(int graph_op, OpSuffix suffix) { return names_->op(graph_op, suffix); }
    std::string_view group_name(int group, GroupSuffix suffix) { return names_->group(group, suffix); }

    // A DMA between HBM and pinned host memory of the output of p_.ops[source]. Few ops are
    // offloaded: their copies' names are looked up by the source's name.
    DeviceOp copy_op(int source, bool to_host) {
        const DeviceOp& src = p_.ops[static_cast<std::size_t>(source)];
        DeviceOp c;
        c.name = names_->copy(src.name, to_host);
        c.category = OpCategory::copy;
        c.phase = to_host ? Phase::forward : Phase::backward;
        c.layer = src.layer;
        c.microbatch = src.microbatch;
        c.resource = transfer_resource_;
        c.bytes = src.saved_bytes;
        c.source_op = source;
        c.to_host = to_host;
        return c;
    }

    int resource_of_axis(int comm_axis) const {
        const std::size_t local = resources_per_stage_ > 0 ? resources_per_stage_ : p_.resources.size();
        for (std::size_t r = 0; r < local; ++r) {
            if (p_.resources[r].comm_axis == comm_axis) return static_cast<int>(r);
        }
        PODSIM_ASSERT(false, "no resource for comm axis");
        return 0;
    }

    int axis(const std::string& name) const {
        auto it = axis_index_.find(name);
        return it == axis_index_.end() ? -1 : it->second;
    }

    void make_state() {
        std::vector<const workload::ParamGroup*> groups;
        groups.reserve(g_.param_groups.size());
        for (const auto& group : g_.param_groups) groups.push_back(&group);
        const StateBytes state = state_bytes(groups, in_.training, in_.mesh);
        p_.params_bytes = state.params;
        p_.grads_bytes = state.grads;
        p_.optimizer_bytes = state.optimizer;
        p_.stacked_gradients = in_.training.scan_layers;
        p_.group_grads_bytes.reserve(groups.size());
        p_.group_grad_in_dot_output.reserve(groups.size());
        const bool jax_one_microbatch = in_.runtime.framework == Framework::jax &&
                                        in_.training.microbatches == 1 && !pipeline_.pipelined();
        p_.grad_cast_after_weight_matmul = jax_one_microbatch;
        for (const auto* group : groups) {
            p_.group_grads_bytes.push_back(unsharded_params(*group) / static_cast<double>(fsdp_) *
                                           param_bytes_);
            p_.group_grad_in_dot_output.push_back(jax_one_microbatch && group->gradient_is_dot_output);
        }
    }

    // A group's parameters once gathered over FSDP: split over tensor and, the routed experts', over
    // the expert axis.
    double unsharded_params(const workload::ParamGroup& group) const {
        const double tensor = group.tensor_sharded ? static_cast<double>(tensor_) : 1.0;
        if (group.expert_params == 0) return static_cast<double>(group.params) / tensor;
        return static_cast<double>(group.params - group.expert_params) / tensor +
               static_cast<double>(group.expert_params) / (tensor * divisor(Shard::expert));
    }

    double gathered_bytes(const workload::ParamGroup& group) const {
        if (group.expert_params == 0)
            return static_cast<double>(group.params) /
                   (group.tensor_sharded ? static_cast<double>(tensor_) : 1.0) * fsdp_bytes_;
        return unsharded_params(group) * fsdp_bytes_;
    }

    double divisor(Shard shard) const { return divisor_[static_cast<std::size_t>(shard)]; }

    // Samples an op's batch extents count: a microbatch's, or outside a pipeline's layers the stage's.
    std::int64_t samples_of(const Op& op) const {
        return pipeline_.pipelined() && op.layer < 0 ? outer_samples_ : samples_;
    }

    double size(const workload::Extent& e, std::int64_t samples) const {
        return static_cast<double>(workload::step_size(e, samples)) / divisor(e.shard);
    }

    double bytes(const Tensor& t, std::int64_t samples) const {
        double n = static_cast<double>(t.element_bytes);
        for (int i = 0; i < t.rank; ++i) n *= size(t.dims[static_cast<std::size_t>(i)], samples);
        return n;
    }

    // Graph op `graph_op` as a compute op of microbatch 0.
    DeviceOp compute_op(int graph_op) {
        const Op& op = g_.op(graph_op);
        DeviceOp d;
        d.name = op_name(graph_op, OpSuffix::none);
        d.category = op.kind == OpKind::matmul ? OpCategory::matmul : OpCategory::fusion;
        d.phase = op.phase;
        d.layer = op.layer;
        d.param_group = op.param_group;
        d.resource = 0;
        d.kept_for_backward = op.kept_for_backward;
        d.output_saved = op.output_saved;
        d.attention_scores = op.attention_internal && op.backward != workload::BackwardKind::flash_attention;
        size_as(d, sizes_of(op));
        return d;
    }

    OpSizes sizes_of(const Op& op) const {
        OpSizes d;
        const std::int64_t samples = samples_of(op);
        for (const auto& t : op.reads) d.bytes += bytes(t, samples);
        for (const auto& t : op.writes) d.output_bytes += bytes(t, samples);
        for (const auto& t : op.saved) d.saved_bytes += bytes(t, samples);
        d.bytes += d.output_bytes;
        if (op.kind == OpKind::matmul) {
            const auto& s = op.matmul;
            d.mm_batch = size(s.batch[0], samples) * size(s.batch[1], samples);
            d.mm_m = size(s.m, samples);
            d.mm_n = size(s.n, samples);
            d.mm_k = size(s.k, samples);
            if (op.group_tile > 0) {
                // A grouped matmul (megablox gmm, jax make_group_metadata): the token rows in tiles of
                // group_tile (at most all of them), and one tile more for each group but the first, which
                // starts inside a tile; the rows are m, or k for the weight gradient.
                double& rows = workload::per_sample(s.m.shard) ? d.mm_m : d.mm_k;
                const double tile = std::min(static_cast<double>(op.group_tile), rows);
                rows = (std::ceil(rows / tile) + size(op.groups, samples) - 1.0) * tile;
            }
            d.flop_scale = op.flop_scale;
            d.flops = 2.0 * d.mm_batch * d.mm_m * d.mm_n * d.mm_k * op.flop_scale;
            // XLA:GPU's split-K partials: of each dot the op stands for. A fused kernel (flash
            // attention) and a grouped matmul are custom calls, not dots.
            if (in_.split_k_multiprocessors > 0 && op.flop_scale == 1.0 && op.group_tile == 0) {
                auto add_dot = [&](double k) {
                    d.split_k_bytes +=
                        xla_gpu_split_k(d.mm_batch, d.mm_m, d.mm_n, k, in_.split_k_multiprocessors)
                            .partial_bytes;
                };
                if (op.k_parts.empty()) add_dot(d.mm_k);
                for (const auto& part : op.k_parts) add_dot(size(part, samples));
            }
        }
        // With sequence parallelism the norms and residual fusions between the tensor-parallel
        // regions work on a sequence slice.
        if (in_.training.tensor_sequence && tensor_ > 1 && op.kind == OpKind::fusion && op.layer >= 0 &&
            !op.attention_internal) {
            d.bytes /= static_cast<double>(tensor_);
            d.output_bytes /= static_cast<double>(tensor_);
            d.saved_bytes /= static_cast<double>(tensor_);
        }
        return d;
    }

    DeviceOp collective(std::string_view name, CollectiveKind kind, int comm_axis, double full_bytes,
                        Phase phase, int layer, int mb) const {
        DeviceOp d;
        d.name = name;
        d.category = category_of(kind);
        d.phase = phase;
        d.layer = layer;
        d.microbatch = mb;
        d.collective = kind;
        d.comm_axis = comm_axis;
        d.collective_bytes = full_bytes;
        d.resource = resource_of_axis(comm_axis);
        d.param_group = -1;
        return d;
    }

    // `fraction` of graph op `graph_op`'s compute op `op` (FLOPs and HBM traffic), for collective
    // matmul. The part holding none of the output is a continuation.
    DeviceOp part_of(const DeviceOp& op, int graph_op, double fraction, bool continuation = false) {
        DeviceOp part = op;
        part.flops *= fraction;
        part.bytes *= fraction;
        part.flop_scale *= fraction;
        part.continuation = continuation;
        if (continuation) part.name = op_name(graph_op, OpSuffix::continuation);
        return part;
    }

    // Sorted and unique: an insertion sort, as ops wait for a handful of others.
    static void sort_unique(OpDeps& op_deps) {
        int* deps = op_deps.begin();
        const std::size_t count = op_deps.size();
        for (std::size_t i = 1; i < count; ++i) {
            const int dep = deps[i];
            std::size_t j = i;
            for (; j > 0 && deps[j - 1] > dep; --j) deps[j] = deps[j - 1];
            deps[j] = dep;
        }
        op_deps.truncate(static_cast<std::size_t>(std::unique(deps, deps + count) - deps));
    }

    int emit(DeviceOp&& op, const OpSizing& sizing = {}) {
        sort_unique(op.deps);
        if (stage_ != 0) to_stage(op);
        p_.ops.push_back(std::move(op));
        if (sizing_) sizing_->push_back(sizing);
        return static_cast<int>(p_.ops.size()) - 1;
    }

    // Graph op `graph_op`'s compute op in microbatch `mb`, copied once, into its place.
    int emit_compute(int graph_op, int mb, const OpDeps& deps) {
        DeviceOp& d = p_.ops.emplace_back(compute_ops_[static_cast<std::size_t>(graph_op)]);
        d.microbatch = mb;
        d.deps = deps;
        sort_unique(d.deps);
        if (stage_ != 0) to_stage(d);
        if (sizing_) sizing_->push_back({.rule = OpSizing::Rule::compute, .ref = graph_op});
        return static_cast<int>(p_.ops.size()) - 1;
    }

    // XLA's latency-hiding scheduler starts an async collective as early as its operand allows and
    // fills the wait with independent work (xla/service/latency_hiding_scheduler.cc). In the backward
    // of a matmul whose input gradient is reduced over `tensor`, the weight gradient does not depend
    // on that reduction: the input gradient goes first, and its all-reduce (or reduce-scatter) runs
    // under the weight gradient. Lowering emits the weight gradient first.
    void reduce_first(std::vector<int>& step_ops) const {
        if (tensor_ <= 1) return;
        for (std::size_t pos = 0; pos + 1 < step_ops.size(); ++pos) {
            const Op& first = g_.op(step_ops[pos]);
            const Op& second = g_.op(step_ops[pos + 1]);
            if (first.kind != OpKind::matmul || second.kind != OpKind::matmul ||
                block_of(first.phase) != Block::backward || first.phase != second.phase ||
                first.layer != second.layer || first.param_group < 0 ||
                first.param_group != second.param_group || second.matmul.k.shard != Shard::tensor ||
                first.matmul.k.shard == Shard::tensor)
                continue;
            const auto preds = preds_.of(step_ops[pos + 1]);
            if (std::find(preds.begin(), preds.end(), step_ops[pos]) != preds.end()) continue;
            std::swap(step_ops[pos], step_ops[pos + 1]);
            ++pos;
        }
    }

    static constexpr std::size_t kUnused = static_cast<std::size_t>(-1);

    // By parameter group: its place in `order` and the positions (in the step's ops) of its first
    // and last op in the block; -1 and kUnused where the block does not use it.
    struct BlockPlan {
        std::vector<int> order;  // groups in order of first use
        std::vector<long> rank;
        std::vector<std::size_t> first_use;
        std::vector<std::size_t> last_use;
    };

    // For each block, parameter groups in order of first use, and each group's last op there.
    void plan_groups(const std::vector<int>& step_ops) { plan_section(step_ops, plans_); }

    void plan_section(const std::vector<int>& step_ops, BlockPlan* plans) const {
        for (int b = 0; b < 2; ++b) {
            BlockPlan& plan = plans[b];
            plan.rank.assign(g_.param_groups.size(), -1);
            plan.first_use.assign(g_.param_groups.size(), kUnused);
            plan.last_use.assign(g_.param_groups.size(), kUnused);
        }
        for (std::size_t pos = 0; pos < step_ops.size(); ++pos) {
            const Op& op = g_.op(step_ops[pos]);
            if (op.param_group < 0) continue;
            auto& plan = plans[static_cast<int>(block_of(op.phase))];
            const auto group = static_cast<std::size_t>(op.param_group);
            if (plan.first_use[group] == kUnused) {
                plan.first_use[group] = pos;
                plan.rank[group] = static_cast<long>(plan.order.size());
                plan.order.push_back(op.param_group);
            }
            plan.last_use[group] = pos;
        }
    }

    // The ops of one microbatch, or of a part of one: without pipeline stages a whole microbatch at a
    // time; with them one stage's part (a chunk of layers, forward or backward, or the part outside
    // the pipeline).
    struct Section {
        const std::vector<int>& ops;  // graph ops in program order
        const BlockPlan* plans;       // parameter groups' uses in `ops`: forward, then backward
        int mb = 0;
        bool last_microbatch = false;  // gradients complete in it are all-reduced over data
        bool gathers = true;           // FSDP all-gathers issued here (else those issued before serve)
        bool reduces = true;           // gradients complete in it are reduce-scattered over FSDP
        bool waits_for_host = true;    // its first op waits for the host's dispatch
        // Graph op -> device op holding its output, kept across sections (pipelined), or null.
        std::vector<int>* ready = nullptr;
        // The microbatch and pass in which the all-gathers issued here are last used, when not
        // their own (a gather serving several microbatches, memory/memory_profile.cpp frees it then).
        int gather_last_mb = -1;
        Phase gather_last_phase = Phase::forward;
        // By parameter group, whether its gradients complete here (null: wherever its last backward
        // op in the section is).
        const std::vector<char>* finishing = nullptr;
    };

    void emit_microbatch(const std::vector<int>& step_ops, int mb, bool last_microbatch,
                         std::vector<int>& final_grad) {
        emit_section(Section{.ops = step_ops, .plans = plans_, .mb = mb, .last_microbatch = last_microbatch},
                     final_grad);
    }

    void emit_section(const Section& section, std::vector<int>& final_grad) {
        const std::vector<int>& step_ops = section.ops;
        const int mb = section.mb;
        const bool last_microbatch = section.last_microbatch;
        const int fsdp_axis = fsdp_axis_;
        const int tensor_axis = tensor_axis_;
        const int data_axis = data_axis_;
        const int depth = in_.runtime.async() ? std::max(0, in_.runtime.prefetch_depth) : 0;
        const bool sequence = tensor_axis >= 0 && in_.training.tensor_sequence;
        const bool collective_matmul = sequence && in_.runtime.overlaps_collective_matmul();
        // Collective matmul's chunks: the last one, which waits for the whole transfer, and the rest.
        const double one_chunk = 1.0 / static_cast<double>(tensor_);
        const double other_chunks = 1.0 - one_chunk;
        // (block, group) -> its all-gather op in this microbatch, -1 before it is issued
        if (!pipeline_.pipelined()) {
            gather_.assign(2 * g_.param_groups.size(), -1);
        } else if (section.gathers) {
            if (gather_.empty()) gather_.assign(2 * g_.param_groups.size(), -1);
            for (int b = 0; b < 2; ++b)
                for (int group : section.plans[b].order)
                    gather_[static_cast<std::size_t>(b) * g_.param_groups.size() +
                            static_cast<std::size_t>(group)] = -1;
        }
        auto gather = [&](int block, int group) -> int& {
            return gather_[static_cast<std::size_t>(block) * g_.param_groups.size() +
                           static_cast<std::size_t>(group)];
        };
        // Remat offload, per layer: (copy to host, op whose output it moved), and the copies back.
        std::map<int, std::vector<std::pair<int, int>>> offloaded;
        std::map<int, std::vector<int>> reloads;
        auto reload_layer = [&](int layer, int after) {
            if (transfer_resource_ < 0 || reloads.count(layer)) return;
            auto& out = reloads[layer];
            for (auto [to_host, source] : offloaded[layer]) {
                DeviceOp back = copy_op(source, false);
                back.deps = {to_host};
                // Not before the backward reaches the layer above (one layer ahead).
                if (after >= 0) back.deps.push_back(after);
                out.push_back(emit(std::move(back), {.rule = OpSizing::Rule::copy, .ref = source}));
            }
        };
        std::vector<int> own_ready;
        if (section.ready == nullptr) own_ready.assign(g_.size(), -1);
        std::vector<int>& ready = section.ready ? *section.ready : own_ready;  // graph op -> device op
        // Graph op -> its compute op in this section: all -1 between sections (reset at its end).
        std::vector<int>& computed = computed_;
        if (computed.empty()) computed.assign(g_.size(), -1);
        int last_compute = last_compute_;

        auto issue_gather = [&](int block, int group) {
            if (fsdp_axis < 0 || gather(block, group) >= 0 || !section.gathers) return;
            const auto& pg = g_.param_groups[static_cast<std::size_t>(group)];
            Phase phase = block == 0 ? Phase::forward : Phase::backward;
            // PyTorch/XLA's pinned-layout all-gather is an all-reduce of the zero-padded shard: the
            // same gathered weights, at an all-reduce's cost.
            DeviceOp ag = collective(
                group_name(group, block == 0 ? GroupSuffix::all_gather_fwd : GroupSuffix::all_gather_bwd),
                in_.runtime.gathers_via_all_reduce() ? CollectiveKind::all_reduce
                                                     : CollectiveKind::all_gather,
                fsdp_axis, gathered_bytes(pg), phase, pg.layer, mb);
            ag.category = OpCategory::all_gather;
            ag.param_group = group;
            if (section.gather_last_mb >= 0) {
                ag.microbatch = section.gather_last_mb;
                ag.phase = section.gather_last_phase;
            }
            // Bounded prefetch: it may start once the compute before its issue point is done.
            if (last_compute >= 0) ag.deps.push_back(last_compute);
            if (last_compute < 0 && host_blocks_) ag.deps.push_back(host_op_);
            gather(block, group) = emit(std::move(ag));
        };

        for (std::size_t pos = 0; pos < step_ops.size(); ++pos) {
            int gi = step_ops[pos];
            const Op& op = g_.op(gi);
            int block = static_cast<int>(block_of(op.phase));
            const BlockPlan& plan = section.plans[block];
            if (op.param_group >= 0 && plan.first_use[static_cast<std::size_t>(op.param_group)] == pos) {
                const long where = plan.rank[static_cast<std::size_t>(op.param_group)];
                for (long j = where; j <= where + depth && j < static_cast<long>(plan.order.size()); ++j) {
                    issue_gather(block, plan.order[static_cast<std::size_t>(j)]);
                }
            }
            const bool gathers_sequence =
                sequence && op.kind == OpKind::matmul && op.matmul.m.shard == Shard::batch &&
                op.matmul.k.shard == Shard::none && op.matmul.n.shard == Shard::tensor;
            const bool reduces =
                tensor_axis >= 0 && op.kind == OpKind::matmul && op.matmul.k.shard == Shard::tensor;
            // With collective matmul the reduce-scatter starts after the first chunk's partial sums
            // and runs under the remaining chunks.
            const bool split = reduces && sequence && collective_matmul;
            // What the op waits for besides its inputs (and the sequence gather).
            auto add_waits = [&](OpDeps& deps) {
                if (op.param_group >= 0) {
                    const int gathered = gather(block, op.param_group);
                    if (gathered >= 0) deps.push_back(gathered);
                }
                if (block == 1 && op.layer >= 0 && transfer_resource_ >= 0) {
                    // The layer's offloaded activations come back before its recompute and backward,
                    // and the next layer's are fetched while this one runs (one layer ahead).
                    reload_layer(op.layer, last_compute);
                    reload_layer(op.layer - 1, last_compute);
                    deps.append(reloads[op.layer].begin(), reloads[op.layer].end());
                }
                if (pos == 0 && host_blocks_ && section.waits_for_host) deps.push_back(host_op_);
                if (deps.empty() && last_compute >= 0) deps.push_back(last_compute);
            };
            OpDeps& deps = deps_;  // its inputs' producers
            deps.clear();
            for (int pred : preds_.of(gi)) {
                int r = pipeline_.pipelined() ? staged_ready(pred, mb, op.layer < 0)
                                              : ready[static_cast<std::size_t>(pred)];
                if (r >= 0) deps.push_back(r);
            }
            if (op.kind == OpKind::exchange) {
                // Tokens to their experts' chips or back: an all-to-all over the expert axis, or
                // without one (every chip holds every expert) nothing, its input standing for its
                // output (and kept in its place when the remat policy keeps it).
                int input = -1;
                for (int dep : deps) input = std::max(input, dep);
                if (op.kept_for_backward && input >= 0)
                    p_.ops[static_cast<std::size_t>(input)].kept_for_backward = true;
                if (expert_axis_ < 0) {
                    ready[static_cast<std::size_t>(gi)] = input;
                    continue;
                }
                // Sized as the whole array over the axis (the scaling book's convention, as for the
                // gathers): each of its chips sends its share of its own tokens to every other.
                const auto chips =
                    static_cast<double>(p_.comm_axes[static_cast<std::size_t>(expert_axis_)].size);
                DeviceOp exchange =
                    collective(op_name(gi, OpSuffix::none), CollectiveKind::all_to_all, expert_axis_,
                               bytes(op.reads[0], samples_of(op)) * chips, op.phase, op.layer, mb);
                exchange.deps = deps;
                ready[static_cast<std::size_t>(gi)] =
                    emit(std::move(exchange),
                         {.rule = OpSizing::Rule::collective_input, .ref = gi, .fraction = chips});
                continue;
            }
            int index;
            if (!gathers_sequence && !split) {
                // Nearly every op: the graph op's compute op as it is, copied once, into its place
                // (copying it out and moving it in twice was a third of partitioning).
                add_waits(deps);
                index = emit_compute(gi, mb, deps);
            } else {
                DeviceOp d = compute_ops_[static_cast<std::size_t>(gi)];
                d.microbatch = mb;
                d.deps = deps;
                if (gathers_sequence) {
                    // Sequence parallelism: the sequence-split input is gathered before a
                    // column-parallel matmul (and its input-gradient matmul in the backward).
                    DeviceOp ag =
                        collective(op_name(gi, OpSuffix::all_gather), CollectiveKind::all_gather, tensor_axis,
                                   bytes(op.reads[0], samples_of(op)), op.phase, op.layer, mb);
                    ag.deps = d.deps;
                    int gather_index =
                        emit(std::move(ag), {.rule = OpSizing::Rule::collective_input, .ref = gi});
                    if (collective_matmul) {
                        // Ring steps: each chunk is multiplied while the next one arrives, so the
                        // matmul waits for the gather only for its last chunk (1/N of its work).
                        DeviceOp main = part_of(d, gi, other_chunks);
                        holds_no_output(main);
                        emit(std::move(main), {.rule = OpSizing::Rule::part,
                                               .zero_output = true,
                                               .ref = gi,
                                               .fraction = other_chunks});
                        d = part_of(d, gi, one_chunk, true);
                    }
                    d.deps.push_back(gather_index);
                }
                add_waits(d.deps);
                if (split) {
                    // (The rest lives in a member: a local op zeroed for every op was a fifth of
                    // this loop.)
                    DeviceOp& rest = split_rest_;
                    rest = part_of(d, gi, other_chunks, true);
                    d = part_of(d, gi, one_chunk);
                    d.output_bytes = rest.output_bytes;
                    d.kept_for_backward = rest.kept_for_backward;
                    holds_no_output(rest);
                }
                const bool parted = split || (gathers_sequence && collective_matmul);
                index = emit(std::move(d),
                             parted ? OpSizing{.rule = OpSizing::Rule::part, .ref = gi, .fraction = one_chunk}
                                    : OpSizing{.rule = OpSizing::Rule::compute, .ref = gi});
            }
            last_compute = index;
            ready[static_cast<std::size_t>(gi)] = index;
            computed[static_cast<std::size_t>(gi)] = index;
            // A recompute copy's residuals go when the backward op of its forward op ends.
            if (op.frees_saved_of >= 0) {
                const int copy = computed[static_cast<std::size_t>(op.frees_saved_of)];
                if (copy >= 0) p_.ops[static_cast<std::size_t>(copy)].release_op = index;
            }
            if (op.offloaded && op.phase == Phase::forward) {
                p_.ops[static_cast<std::size_t>(index)].offloaded = true;
                DeviceOp to_host = copy_op(index, true);
                to_host.deps = {index};
                offloaded[op.layer].push_back(
                    {emit(std::move(to_host), {.rule = OpSizing::Rule::copy, .ref = index}), index});
            }

            // Partial sums over a split contraction dimension: all-reduce over `tensor`, or with
            // sequence parallelism a reduce-scatter that leaves the result split along the sequence.
            if (reduces) {
                auto kind = sequence ? CollectiveKind::reduce_scatter : CollectiveKind::all_reduce;
                DeviceOp& produced = p_.ops[static_cast<std::size_t>(index)];
                DeviceOp ar =
                    collective(op_name(gi, sequence ? OpSuffix::reduce_scatter : OpSuffix::all_reduce), kind,
                               tensor_axis, produced.output_bytes, op.phase, op.layer, mb);
                if (sequence) split_output(produced);  // kept sequence-split
                ar.deps.push_back(index);
                ready[static_cast<std::size_t>(gi)] = emit(
                    std::move(ar),
                    {.rule = OpSizing::Rule::collective_output, .divide_source = sequence, .ref = index});
                if (split) {
                    // The compute resource runs in program order, so every later compute op also
                    // waits for the rest of the matmul.
                    split_rest_.deps = {index};
                    last_compute = emit(std::move(split_rest_), {.rule = OpSizing::Rule::part,
                                                                 .zero_output = true,
                                                                 .ref = gi,
                                                                 .fraction = other_chunks});
                }
            }

            // Gradients of a group are complete after its last backward op.
            if (op.param_group >= 0 && block == 1 &&
                plan.last_use[static_cast<std::size_t>(op.param_group)] == pos &&
                (section.finishing == nullptr ||
                 (*section.finishing)[static_cast<std::size_t>(op.param_group)])) {
                finish_gradients(op.param_group, index, mb, last_microbatch, fsdp_axis, data_axis, final_grad,
                                 section.reduces);
            }
        }
        last_compute_ = last_compute;
        for (int gi : step_ops) computed[static_cast<std::size_t>(gi)] = -1;
    }

    void finish_gradients(int group, int after, int mb, bool last_microbatch, int fsdp_axis, int data_axis,
                          std::vector<int>& final_grad, bool reduce_scatter = true) {
        const auto& pg = g_.param_groups[static_cast<std::size_t>(group)];
        const double per_element = fsdp_axis >= 0 ? reduce_scatter_bytes_ : param_bytes_;
        double full = pg.expert_params == 0
                          ? static_cast<double>(pg.params) /
                                (pg.tensor_sharded ? static_cast<double>(tensor_) : 1.0) * per_element
                          : unsharded_params(pg) * per_element;
        int last = after;
        if (fsdp_axis >= 0 && reduce_scatter) {
            DeviceOp rs =
                collective(group_name(group, GroupSuffix::reduce_scatter), CollectiveKind::reduce_scatter,
                           fsdp_axis, full, Phase::backward, pg.layer, mb);
            rs.deps.push_back(last);
            rs.param_group = group;
            last = emit(std::move(rs));
        }
        if (last_microbatch) {
            const double shard = full / static_cast<double>(fsdp_);
            if (dcn_axis_ < 0 && data_axis >= 0) {
                DeviceOp ar =
                    collective(group_name(group, GroupSuffix::all_reduce), CollectiveKind::all_reduce,
                               data_axis, shard, Phase::backward, pg.layer, mb);
                ar.deps.push_back(last);
                last = emit(std::move(ar));
            }
            if (expert_axis_ >= 0) {
                // The expert axis splits the batch: the gradients of what it does not split (all but
                // the routed experts) are summed over it.
                const double tensor = pg.tensor_sharded ? static_cast<double>(tensor_) : 1.0;
                const double dense = static_cast<double>(pg.params - pg.expert_params) / tensor *
                                     per_element / static_cast<double>(fsdp_);
                DeviceOp ar =
                    collective(group_name(group, GroupSuffix::all_reduce_experts), CollectiveKind::all_reduce,
                               expert_axis_, dense, Phase::backward, pg.layer, mb);
                ar.deps.push_back(last);
                last = emit(std::move(ar));
            }
            if (pipeline_.pipelined() && pg.layer < 0) {
                // Outside the pipeline the stage axis splits the batch: these gradients are summed
                // over the stages.
                DeviceOp ar =
                    collective(group_name(group, GroupSuffix::all_reduce_stages), CollectiveKind::all_reduce,
                               stage_axis_, shard, Phase::backward, pg.layer, mb);
                ar.deps.push_back(last);
                last = emit(std::move(ar));
            }
            if (dcn_axis_ >= 0 && !in_.runtime.dcn_overlap && !pipeline_.pipelined()) {
                // Started once the whole backward is done (run() emits it).
                deferred_dcn_.push_back({group, last, mb, data_axis, shard});
                last = -1;
            } else if (dcn_axis_ >= 0) {
                last = reduce_over_slices(group, last, mb, data_axis, shard);
            }
        }
        final_grad[static_cast<std::size_t>(group)] = last;
    }

    // The all-reduce of a group's gradient shard across slices, after `after`. With a data axis
    // inside the slice too, XLA reduces hierarchically so that DCN carries one copy per slice: a
    // reduce-scatter over the ICI data axis, the all-reduce of that piece over DCN, an all-gather
    // over ICI (MaxText docs/guides/optimization/sharding.md, "DP Arithmetic Intensity
    // (Hierarchical)").
    int reduce_over_slices(int group, int after, int mb, int data_axis, double shard) {
        const auto& pg = g_.param_groups[static_cast<std::size_t>(group)];
        int last = after;
        const double piece =
            data_axis >= 0 ? shard / static_cast<double>(in_.mesh.ici_size_of("data")) : shard;
        if (data_axis >= 0) {
            DeviceOp rs =
                collective(group_name(group, GroupSuffix::reduce_scatter_data),
                           CollectiveKind::reduce_scatter, data_axis, shard, Phase::backward, pg.layer, mb);
            rs.deps.push_back(last);
            last = emit(std::move(rs));
        }
        DeviceOp ar = collective(group_name(group, GroupSuffix::all_reduce_dcn), CollectiveKind::all_reduce,
                                 dcn_axis_, piece, Phase::backward, pg.layer, mb);
        ar.deps.push_back(last);
        // The first of the deferred reductions waits for the end of the backward; the DCN runs the
        // others after it.
        if (!in_.runtime.dcn_overlap && !dcn_started_ && last_compute_ >= 0) ar.deps.push_back(last_compute_);
        dcn_started_ = true;
        last = emit(std::move(ar));
        if (data_axis >= 0) {
            DeviceOp ag =
                collective(group_name(group, GroupSuffix::all_gather_data), CollectiveKind::all_gather,
                           data_axis, shard, Phase::backward, pg.layer, mb);
            ag.deps.push_back(last);
            last = emit(std::move(ag));
        }
        return last;
    }

    struct DeferredReduce {
        int group = -1, after = -1, microbatch = 0, data_axis = -1;
        double shard = 0.0;
    };
    std::vector<DeferredReduce> deferred_dcn_;
    bool dcn_started_ = false;

    const PartitionInput& in_;
    const workload::OpGraph& g_;
    // Pipeline stages (one program each, run_pipelined): the schedule, the stage being emitted, how
    // many resources and comm axes each stage has, the samples of an op outside the pipeline, where
    // each graph op's output is (by microbatch for the layers, by stage outside them), the
    // collective-permutes sent so far ((source op, receiving stage) -> permute) and the stage axis.
    PipelineSchedule pipeline_;
    int stage_ = 0;
    std::size_t resources_per_stage_ = 0, axes_per_stage_ = 0;
    std::int64_t outer_samples_ = 1;
    std::vector<std::vector<int>> ready_mb_, ready_outer_;
    std::map<std::pair<int, int>, int> permutes_;
    int stage_axis_ = -1;
    int expert_axis_ = -1;  // the comm axis tokens go to their experts over (all-to-all), or -1
    workload::OpGraph::PredecessorLists preds_;
    DeviceProgram p_;
    // The kinds that gather parameters (FSDP) and reduce partial sums (tensor), and their axes' sizes.
    const ParallelismKind& gathering_ = kind_inserting(CollectiveRule::gather_parameters);
    const ParallelismKind& reducing_ = kind_inserting(CollectiveRule::reduce_partial_sums);
    long fsdp_ = 1, tensor_ = 1;
    std::array<double, workload::kShardRoles> divisor_{};  // by Shard: a table, as every extent asks
    std::int64_t samples_ = 1;  // per microbatch, all chips: what the graph's batch extents count
    double param_bytes_ = 4.0;
    double fsdp_bytes_ = 4.0;            // per element of FSDP gathers
    double reduce_scatter_bytes_ = 4.0;  // per element of FSDP gradient reduce-scatters
    std::map<std::string, int> axis_index_;
    std::unique_ptr<ProgramNames> own_names_;  // when the input shares none
    ProgramNames* names_ = nullptr;
    int dcn_axis_ = -1;
    // The comm axes of the kinds that gather parameters, reduce partial sums and all-reduce
    // gradients (-1: size 1), looked up once.
    int fsdp_axis_ = -1, tensor_axis_ = -1, data_axis_ = -1;
    int host_op_ = -1;
    int transfer_resource_ = -1;  // host-transfer resource, when the remat policy offloads
    int last_compute_ = -1;
    bool host_blocks_ = in_.runtime.host_blocks_device();  // the first device ops wait for the host
    BlockPlan plans_[2];
    std::vector<DeviceOp> compute_ops_;        // by graph op, microbatch 0
    std::vector<int> computed_;                // emit_section's, kept to reuse its storage
    std::vector<int> gather_;                  // emit_microbatch's all-gathers, kept to reuse its storage
    DeviceOp split_rest_;                      // emit_microbatch: the rest of a split matmul, until emitted
    OpDeps deps_;                              // emit_microbatch: an op's deps, kept to reuse its storage
    std::vector<OpSizing>* sizing_ = nullptr;  // where run() records how ops are sized, if anywhere
};

}  // namespace

StateBytes state_bytes(const std::vector<const workload::ParamGroup*>& groups,
                       const workload::TrainingSpec& training, const network::MeshSpec& mesh) {
    const auto param_bytes = static_cast<double>(core::dtype_bytes(training.param_dtype));
    StateBytes state;
    const ParamSplit split = param_split(mesh);
    for (const workload::ParamGroup* group : groups) {
        const auto divisor = static_cast<double>(split.divisor(*group));
        const double shard = split.shard(*group);
        state.params += shard * param_bytes;
        state.grads += shard * param_bytes;
        double optimizer =
            workload::optimizer_state_bytes(*group, training.optimizer, training.param_dtype) / divisor;
        // The routed experts' state is split over the expert axis too, in proportion.
        if (group->expert_params > 0) optimizer *= shard / (static_cast<double>(group->params) / divisor);
        state.optimizer += optimizer;
        if (training.master_dtype && *training.master_dtype != training.param_dtype)
            state.optimizer += shard * static_cast<double>(core::dtype_bytes(*training.master_dtype));
    }
    return state;
}

DeviceProgram partition(const PartitionInput& input) {
    Partitioner partitioner(input);
    return partitioner.run();
}

ResizableProgram partition_resizable(const PartitionInput& input) {
    ResizableProgram resizable;
    Partitioner partitioner(input);
    resizable.program = partitioner.run(&resizable.sizing);
    return resizable;
}

void resize(DeviceProgram& program, const std::vector<OpSizing>& sizing, const PartitionInput& input) {
    Partitioner partitioner(input);
    partitioner.resize(program, sizing);
}

}  // namespace podsim::parallel
