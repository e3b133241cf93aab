#include "parallel/partition.hpp"

#include <algorithm>
#include <array>
#include <map>
#include <memory>
#include <string_view>

#include "core/assert.hpp"
#include "core/dtype.hpp"
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
        data_ = in.mesh.size_of("data");
        fsdp_ = in.mesh.ici_size_of("fsdp");
        tensor_ = in.mesh.ici_size_of("tensor");
        batch_div_ = static_cast<double>(data_ * fsdp_);
        preds_ = g_.predecessor_lists();
        divisor_ = {1.0, batch_div_, static_cast<double>(tensor_), static_cast<double>(fsdp_ * tensor_)};
        PODSIM_ASSERT(
            in.training.microbatches > 0 && in.training.global_batch % in.training.microbatches == 0,
            "microbatches must divide the batch (validated by config)");
        samples_ = in.training.global_batch / in.training.microbatches;
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
        make_state();

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
                    if (rule.zero_output) {
                        op.output_bytes = 0.0;
                        op.saved_bytes = 0.0;
                    }
                    break;
                case OpSizing::Rule::collective_input:
                    op.collective_bytes = bytes(g_.op(rule.ref).reads[0]);
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
    };

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
            dcn_axis_ = static_cast<int>(p_.comm_axes.size());
            p_.resources.push_back(Resource{"dcn", ResourceKind::dcn, dcn_axis_});
            p_.comm_axes.push_back(
                CommAxis{"dcn", ResourceKind::dcn, static_cast<int>(in_.mesh.dcn_size()), {}});
        }
        // Remat offload moves saved activations over the chip's host link, a resource of its own.
        bool offloads = false;
        for (const auto& op : g_.ops()) offloads = offloads || op.offloaded;
        if (offloads) {
            transfer_resource_ = static_cast<int>(p_.resources.size());
            p_.resources.push_back(Resource{"host-transfer", ResourceKind::host_transfer, -1});
        }
        p_.resources.push_back(Resource{"host", ResourceKind::host, -1});
    }

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
        for (std::size_t r = 0; r < p_.resources.size(); ++r) {
            if (p_.resources[r].comm_axis == comm_axis) return static_cast<int>(r);
        }
        PODSIM_ASSERT(false, "no resource for comm axis");
        return 0;
    }

    int axis(const std::string& name) const {
        auto it = axis_index_.find(name);
        return it == axis_index_.end() ? -1 : it->second;
    }

    double group_divisor(const workload::ParamGroup& group) const {
        return static_cast<double>(fsdp_) * (group.tensor_sharded ? static_cast<double>(tensor_) : 1.0);
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
        for (const auto* group : groups) {
            const double divisor =
                static_cast<double>(fsdp_) * (group->tensor_sharded ? static_cast<double>(tensor_) : 1.0);
            p_.group_grads_bytes.push_back(static_cast<double>(group->params) / divisor * param_bytes_);
        }
    }

    double gathered_bytes(const workload::ParamGroup& group) const {
        return static_cast<double>(group.params) /
               (group.tensor_sharded ? static_cast<double>(tensor_) : 1.0) * fsdp_bytes_;
    }

    double divisor(Shard shard) const { return divisor_[static_cast<std::size_t>(shard)]; }

    double size(const workload::Extent& e) const {
        return static_cast<double>(workload::step_size(e, samples_)) / divisor(e.shard);
    }

    double bytes(const Tensor& t) const {
        double n = static_cast<double>(t.element_bytes);
        for (int i = 0; i < t.rank; ++i) n *= size(t.dims[static_cast<std::size_t>(i)]);
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
        for (const auto& t : op.reads) d.bytes += bytes(t);
        for (const auto& t : op.writes) d.output_bytes += bytes(t);
        for (const auto& t : op.saved) d.saved_bytes += bytes(t);
        d.bytes += d.output_bytes;
        if (op.kind == OpKind::matmul) {
            const auto& s = op.matmul;
            d.mm_batch = size(s.batch[0]) * size(s.batch[1]);
            d.mm_m = size(s.m);
            d.mm_n = size(s.n);
            d.mm_k = size(s.k);
            d.flop_scale = op.flop_scale;
            d.flops = 2.0 * d.mm_batch * d.mm_m * d.mm_n * d.mm_k * op.flop_scale;
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

    // For each block, parameter groups in order of first use, and each group's last op there.
    void plan_groups(const std::vector<int>& step_ops) {
        for (auto& plan : plans_) {
            plan.rank.assign(g_.param_groups.size(), -1);
            plan.first_use.assign(g_.param_groups.size(), kUnused);
            plan.last_use.assign(g_.param_groups.size(), kUnused);
        }
        for (std::size_t pos = 0; pos < step_ops.size(); ++pos) {
            const Op& op = g_.op(step_ops[pos]);
            if (op.param_group < 0) continue;
            auto& plan = plans_[static_cast<int>(block_of(op.phase))];
            const auto group = static_cast<std::size_t>(op.param_group);
            if (plan.first_use[group] == kUnused) {
                plan.first_use[group] = pos;
                plan.rank[group] = static_cast<long>(plan.order.size());
                plan.order.push_back(op.param_group);
            }
            plan.last_use[group] = pos;
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

    void emit_microbatch(const std::vector<int>& step_ops, int mb, bool last_microbatch,
                         std::vector<int>& final_grad) {
        const int fsdp_axis = axis("fsdp");
        const int tensor_axis = axis("tensor");
        const int data_axis = axis("data");
        const int depth = in_.runtime.async() ? std::max(0, in_.runtime.prefetch_depth) : 0;
        const bool sequence = tensor_axis >= 0 && in_.training.tensor_sequence;
        const bool collective_matmul = sequence && in_.runtime.overlaps_collective_matmul();
        // Collective matmul's chunks: the last one, which waits for the whole transfer, and the rest.
        const double one_chunk = 1.0 / static_cast<double>(tensor_);
        const double other_chunks = 1.0 - one_chunk;
        // (block, group) -> its all-gather op in this microbatch, -1 before it is issued
        gather_.assign(2 * g_.param_groups.size(), -1);
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
        std::vector<int> ready(g_.size(), -1);     // graph op -> device op holding its output
        std::vector<int> computed(g_.size(), -1);  // graph op -> its compute op
        int last_compute = mb == 0 ? -1 : last_compute_;

        auto issue_gather = [&](int block, int group) {
            if (fsdp_axis < 0 || gather(block, group) >= 0) return;
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
            // Bounded prefetch: it may start once the compute before its issue point is done.
            if (last_compute >= 0) ag.deps.push_back(last_compute);
            if (last_compute < 0 && host_blocks_) ag.deps.push_back(host_op_);
            gather(block, group) = emit(std::move(ag));
        };

        for (std::size_t pos = 0; pos < step_ops.size(); ++pos) {
            int gi = step_ops[pos];
            const Op& op = g_.op(gi);
            int block = static_cast<int>(block_of(op.phase));
            const BlockPlan& plan = plans_[block];
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
                if (pos == 0 && host_blocks_) deps.push_back(host_op_);
                if (deps.empty() && last_compute >= 0) deps.push_back(last_compute);
            };
            OpDeps& deps = deps_;  // its inputs' producers
            deps.clear();
            for (int pred : preds_.of(gi)) {
                int r = ready[static_cast<std::size_t>(pred)];
                if (r >= 0) deps.push_back(r);
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
                    DeviceOp ag = collective(op_name(gi, OpSuffix::all_gather), CollectiveKind::all_gather,
                                             tensor_axis, bytes(op.reads[0]), op.phase, op.layer, mb);
                    ag.deps = d.deps;
                    int gather_index =
                        emit(std::move(ag), {.rule = OpSizing::Rule::collective_input, .ref = gi});
                    if (collective_matmul) {
                        // Ring steps: each chunk is multiplied while the next one arrives, so the
                        // matmul waits for the gather only for its last chunk (1/N of its work).
                        DeviceOp main = part_of(d, gi, other_chunks);
                        main.output_bytes = 0.0;
                        main.kept_for_backward = false;
                        main.saved_bytes = 0.0;
                        main.output_saved = false;
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
                    rest.output_bytes = 0.0;
                    rest.kept_for_backward = false;
                    rest.saved_bytes = 0.0;
                    rest.output_saved = false;
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
                plan.last_use[static_cast<std::size_t>(op.param_group)] == pos) {
                finish_gradients(op.param_group, index, mb, last_microbatch, fsdp_axis, data_axis,
                                 final_grad);
            }
        }
        last_compute_ = last_compute;
    }

    void finish_gradients(int group, int after, int mb, bool last_microbatch, int fsdp_axis, int data_axis,
                          std::vector<int>& final_grad) {
        const auto& pg = g_.param_groups[static_cast<std::size_t>(group)];
        const double per_element = fsdp_axis >= 0 ? reduce_scatter_bytes_ : param_bytes_;
        double full = static_cast<double>(pg.params) /
                      (pg.tensor_sharded ? static_cast<double>(tensor_) : 1.0) * per_element;
        int last = after;
        if (fsdp_axis >= 0) {
            DeviceOp rs =
                collective(group_name(group, GroupSuffix::reduce_scatter), CollectiveKind::reduce_scatter,
                           fsdp_axis, full, Phase::backward, pg.layer, mb);
            rs.deps.push_back(last);
            rs.param_group = group;
            last = emit(std::move(rs));
        }
        if (last_microbatch) {
            const double shard = full / static_cast<double>(fsdp_);
            if (dcn_axis_ >= 0 && !in_.runtime.dcn_overlap) {
                // Started once the whole backward is done (run() emits it).
                deferred_dcn_.push_back({group, last, mb, data_axis, shard});
                last = -1;
            } else if (dcn_axis_ >= 0) {
                last = reduce_over_slices(group, last, mb, data_axis, shard);
            } else if (data_axis >= 0) {
                DeviceOp ar =
                    collective(group_name(group, GroupSuffix::all_reduce), CollectiveKind::all_reduce,
                               data_axis, shard, Phase::backward, pg.layer, mb);
                ar.deps.push_back(last);
                last = emit(std::move(ar));
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
    workload::OpGraph::PredecessorLists preds_;
    DeviceProgram p_;
    long data_ = 1, fsdp_ = 1, tensor_ = 1;
    double batch_div_ = 1.0;
    std::array<double, 4> divisor_{};  // by Shard: a table, as every extent asks
    std::int64_t samples_ = 1;         // per microbatch, all chips: what the graph's batch extents count
    double param_bytes_ = 4.0;
    double fsdp_bytes_ = 4.0;            // per element of FSDP gathers
    double reduce_scatter_bytes_ = 4.0;  // per element of FSDP gradient reduce-scatters
    std::map<std::string, int> axis_index_;
    std::unique_ptr<ProgramNames> own_names_;  // when the input shares none
    ProgramNames* names_ = nullptr;
    int dcn_axis_ = -1;
    int host_op_ = -1;
    int transfer_resource_ = -1;  // host-transfer resource, when the remat policy offloads
    int last_compute_ = -1;
    bool host_blocks_ = in_.runtime.host_blocks_device();  // the first device ops wait for the host
    BlockPlan plans_[2];
    std::vector<DeviceOp> compute_ops_;        // by graph op, microbatch 0
    std::vector<int> gather_;                  // emit_microbatch's all-gathers, kept to reuse its storage
    DeviceOp split_rest_;                      // emit_microbatch: the rest of a split matmul, until emitted
    OpDeps deps_;                              // emit_microbatch: an op's deps, kept to reuse its storage
    std::vector<OpSizing>* sizing_ = nullptr;  // where run() records how ops are sized, if anywhere
};

}  // namespace

StateBytes state_bytes(const std::vector<const workload::ParamGroup*>& groups,
                       const workload::TrainingSpec& training, const network::MeshSpec& mesh) {
    const auto fsdp = static_cast<double>(mesh.ici_size_of("fsdp"));
    const auto tensor = static_cast<double>(mesh.ici_size_of("tensor"));
    const auto param_bytes = static_cast<double>(core::dtype_bytes(training.param_dtype));
    StateBytes state;
    for (const workload::ParamGroup* group : groups) {
        const double divisor = fsdp * (group->tensor_sharded ? tensor : 1.0);
        const double shard = static_cast<double>(group->params) / divisor;
        state.params += shard * param_bytes;
        state.grads += shard * param_bytes;
        state.optimizer +=
            workload::optimizer_state_bytes(*group, training.optimizer, training.param_dtype) / divisor;
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
