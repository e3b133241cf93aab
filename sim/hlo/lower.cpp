#include "hlo/lower.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <unordered_map>

#include <fmt/format.h>

#include "collectives/collective_kind.hpp"
#include "core/diagnostics.hpp"
#include "hlo/op_work.hpp"
#include "parallel/name_store.hpp"

namespace podsim::hlo {
namespace {

using parallel::BufferHolder;
using parallel::DeviceOp;
using parallel::OpCategory;
using workload::Phase;

// Ops one simulation may hold: a step of this many kernels per device takes a minute and gigabytes
// to simulate.
constexpr std::size_t kMaxOps = 2'000'000;
// Memory spaces whose bytes are HBM: 0. On TPU 1 is on-chip VMEM, 5 pinned host memory.
constexpr std::int64_t kDeviceMemorySpace = 0;
constexpr std::int64_t kHostMemorySpace = 5;

[[noreturn]] void lower_error(const Module& m, const Instruction* inst, std::string message) {
    core::Diagnostics d;
    const int line = inst ? inst->line : 0;
    d.error({m.path, line, line > 0 ? 1 : 0}, inst ? inst->name : std::string(), std::move(message));
    throw core::UserError(d);
}

const Instruction& at(const Computation& c, int i) {
    return c.instructions[static_cast<std::size_t>(i)];
}

// Follows views and copies of a scalar: convert, bitcast, copy, reshape, broadcast of a scalar.
int through_scalar_views(const Computation& c, int i) {
    for (int guard = 0; guard < 16; ++guard) {
        const Instruction& inst = at(c, i);
        if ((inst.opcode == Opcode::convert || inst.opcode == Opcode::bitcast ||
             inst.opcode == Opcode::copy || inst.opcode == Opcode::reshape ||
             inst.opcode == Opcode::broadcast) &&
            inst.operands.size() == 1) {
            i = inst.operands[0];
            continue;
        }
        break;
    }
    return i;
}

std::optional<std::int64_t> constant_of(const Computation& c, int i) {
    const Instruction& inst = at(c, through_scalar_views(c, i));
    if (inst.opcode == Opcode::constant && inst.integer_value) return inst.integer_value;
    return std::nullopt;
}

// The tuple index of `i` when it is get-tuple-element(parameter(0), k) (through views).
std::optional<std::int64_t> induction_index(const Computation& c, int i) {
    const Instruction& inst = at(c, through_scalar_views(c, i));
    if (inst.opcode != Opcode::get_tuple_element || inst.operands.size() != 1) return std::nullopt;
    if (at(c, inst.operands[0]).opcode != Opcode::parameter) return std::nullopt;
    return inst.tuple_index;
}

std::size_t leaf_offset(const Shape& shape, const std::vector<std::int64_t>& index) {
    const Shape* s = &shape;
    std::size_t offset = 0;
    for (std::int64_t k : index) {
        if (!s->is_tuple() || k < 0 || k >= static_cast<std::int64_t>(s->tuple.size())) return offset;
        offset += s->first_leaf_of_element(static_cast<std::size_t>(k));
        s = &s->tuple[static_cast<std::size_t>(k)];
    }
    return offset;
}

std::optional<collectives::CollectiveKind> collective_kind(Opcode op) {
    using collectives::CollectiveKind;
    switch (base_of_async(op)) {
        case Opcode::all_gather:
        case Opcode::collective_broadcast:
            return CollectiveKind::all_gather;
        case Opcode::reduce_scatter:
            return CollectiveKind::reduce_scatter;
        case Opcode::all_reduce:
        case Opcode::collective_reduce:
            return CollectiveKind::all_reduce;
        case Opcode::all_to_all:
        case Opcode::ragged_all_to_all:
            return CollectiveKind::all_to_all;
        case Opcode::collective_permute:
            return CollectiveKind::collective_permute;
        default:
            return std::nullopt;
    }
}

// JAX names ops by their place in the traced program: the backward pass is the transpose of the
// forward's JVP, recomputed forwards sit in rematted_computation, and what is outside both (the
// optimizer update) is neither.
Phase phase_of(const std::string& op_name, Phase previous) {
    if (op_name.empty()) return previous;
    if (op_name.find("transpose(") != std::string::npos)
        return op_name.find("rematted_computation") != std::string::npos ? Phase::recompute : Phase::backward;
    if (op_name.find("jvp(") != std::string::npos) return Phase::forward;
    return Phase::optimizer;
}

class Lowering {
  public:
    Lowering(const Module& m, const LowerOptions& o)
        : m_(m), o_(o), work_(m), names_(std::make_shared<parallel::NameStore>()) {}

    LoweredModule run() {
        std::vector<MeshAxisSpec> mesh = module_mesh();
        std::int64_t devices = m_.devices();
        const std::int64_t named = largest_device_id() + 1;
        if (named > devices) devices = named;
        placement_ =
            std::make_unique<Placement>(o_.topology, o_.slice, devices, mesh, o_.device_order, m_.path);
        jax_names_ = names_jax_phases();

        p_.resources.push_back(parallel::Resource{"compute", parallel::ResourceKind::compute, -1});
        DeviceOp dispatch;
        dispatch.name = "host.dispatch";
        dispatch.category = OpCategory::host;
        host_op_ = emit(std::move(dispatch));  // its resource is set when the host resource is added

        const Computation& entry = m_.entry_computation();
        std::vector<Value> args(entry.parameters.size());
        for (std::size_t n = 0; n < entry.parameters.size(); ++n) {
            const Instruction& param = at(entry, entry.parameters[n]);
            const BufferHolder holder = param.op_name.find("opt_state") != std::string::npos
                                            ? BufferHolder::optimizer
                                            : BufferHolder::params;
            args[n] = fresh(param.shape, -1, holder, /*whole_step=*/true);
        }
        // Outputs aliased to donated parameters are written into the parameters' buffers.
        const Shape& root_shape = at(entry, entry.root).shape;
        std::vector<int> targets(root_shape.leaf_count(), -1);
        for (const InputOutputAlias& alias : m_.input_output_alias) {
            if (alias.parameter < 0 || alias.parameter >= static_cast<std::int64_t>(args.size())) continue;
            const std::size_t out = leaf_offset(root_shape, alias.output_index);
            const Value& param = args[static_cast<std::size_t>(alias.parameter)];
            const std::size_t in =
                leaf_offset(at(entry, entry.parameters[static_cast<std::size_t>(alias.parameter)]).shape,
                            alias.parameter_index);
            if (out < targets.size() && in < param.size()) targets[out] = param[in].buffer;
        }
        const Value result = evaluate(m_.entry, args, targets, false);
        for (const Leaf& leaf : result) {
            if (leaf.buffer >= 0)
                p_.buffers[static_cast<std::size_t>(leaf.buffer)].last_op = -1;  // lives out
        }

        p_.resources.push_back(parallel::Resource{"host", parallel::ResourceKind::host, -1});
        p_.ops[static_cast<std::size_t>(host_op_)].resource = static_cast<int>(p_.resources.size()) - 1;
        p_.chips = devices;
        p_.names = names_;

        LoweredModule out;
        out.devices = devices;
        out.placement = placement_->description();
        out.mesh = placement_->mesh();
        for (const DeviceOp& op : p_.ops) out.flops_per_device += op.flops;
        out.collective_bytes = std::move(collective_bytes_);
        out.collective_counts = std::move(collective_counts_);
        out.loops = loops_;
        out.compiled_kernels = static_cast<long>(interned_.size());
        for (const auto& [target, count] : work_.unknown_targets())
            notes_.push_back(fmt::format(
                "custom call {} ({} per step) priced from its operand and result bytes only", target, count));
        out.notes = std::move(notes_);
        out.program = std::move(p_);
        return out;
    }

  private:
    struct Leaf {
        int buffer = -1;    // index into program.buffers, -1 for none (tokens, async contexts)
        int producer = -1;  // the op that wrote it last, -1 before the step
    };
    using Value = std::vector<Leaf>;

    // ---------------------------------------------------------------- module-wide facts

    std::vector<MeshAxisSpec> module_mesh() const {
        for (const auto& c : m_.computations) {
            for (const auto& inst : c.instructions) {
                if (inst.replica_groups.form != ReplicaGroups::Form::mesh_axes) continue;
                std::vector<MeshAxisSpec> mesh;
                for (const auto& a : inst.replica_groups.mesh) mesh.push_back({a.name, a.size});
                if (inst.replica_groups.mesh_device_ids.empty()) return mesh;
            }
        }
        return {};
    }

    std::int64_t largest_device_id() const {
        std::int64_t largest = 0;
        for (const auto& c : m_.computations) {
            for (const auto& inst : c.instructions) {
                for (const auto& group : inst.replica_groups.lists)
                    for (std::int64_t id : group) largest = std::max(largest, id);
                for (const auto& [s, t] : inst.source_target_pairs) largest = std::max({largest, s, t});
                if (inst.replica_groups.form == ReplicaGroups::Form::iota) {
                    largest = std::max(largest,
                                       inst.replica_groups.num_groups * inst.replica_groups.group_size - 1);
                } else if (inst.replica_groups.form == ReplicaGroups::Form::mesh_axes) {
                    std::int64_t n = 1;
                    for (const auto& a : inst.replica_groups.mesh) n *= a.size;
                    largest = std::max(largest, n - 1);
                }
            }
        }
        return largest;
    }

    bool names_jax_phases() const {
        for (const auto& c : m_.computations)
            for (const auto& inst : c.instructions)
                if (inst.op_name.find("jvp(") != std::string::npos) return true;
        return false;
    }

    // Per instruction of a computation, per leaf: the root leaf its value becomes (through tuples,
    // get-tuple-elements and bitcasts), or -1. A computation whose root leaves must land in given
    // buffers (a loop's state, donated parameters) has them written there by their producers.
    const std::vector<std::vector<int>>& root_flows(int ci) {
        auto found = flows_.find(ci);
        if (found != flows_.end()) return found->second;
        const Computation& c = m_.computations[static_cast<std::size_t>(ci)];
        std::vector<std::vector<int>> flows(c.instructions.size());
        for (std::size_t i = 0; i < c.instructions.size(); ++i)
            flows[i].assign(c.instructions[i].shape.leaf_count(), -1);
        std::vector<std::tuple<int, std::size_t, int>> work;
        for (std::size_t l = 0; l < flows[static_cast<std::size_t>(c.root)].size(); ++l)
            work.emplace_back(c.root, l, static_cast<int>(l));
        while (!work.empty()) {
            auto [i, leaf, r] = work.back();
            work.pop_back();
            auto& slot = flows[static_cast<std::size_t>(i)];
            if (leaf >= slot.size() || slot[leaf] >= 0) continue;
            slot[leaf] = r;
            const Instruction& inst = at(c, i);
            switch (inst.opcode) {
                case Opcode::tuple: {
                    std::size_t offset = 0;
                    for (int operand : inst.operands) {
                        const std::size_t n = at(c, operand).shape.leaf_count();
                        if (leaf < offset + n) {
                            work.emplace_back(operand, leaf - offset, r);
                            break;
                        }
                        offset += n;
                    }
                    break;
                }
                case Opcode::get_tuple_element:
                    if (!inst.operands.empty())
                        work.emplace_back(
                            inst.operands[0],
                            at(c, inst.operands[0])
                                    .shape.first_leaf_of_element(static_cast<std::size_t>(inst.tuple_index)) +
                                leaf,
                            r);
                    break;
                case Opcode::bitcast:
                case Opcode::opt_barrier:
                case Opcode::add_dependency:
                case Opcode::domain:
                    if (!inst.operands.empty()) work.emplace_back(inst.operands[0], leaf, r);
                    break;
                default:
                    break;
            }
        }
        return flows_.emplace(ci, std::move(flows)).first->second;
    }

    // ---------------------------------------------------------------- buffers and ops

    int new_buffer(const Shape& leaf, int first_op, BufferHolder holder) {
        parallel::Buffer b;
        b.bytes = leaf.memory_space == kDeviceMemorySpace ? leaf.bytes() : 0.0;
        b.first_op = first_op;
        b.last_op = first_op;
        b.holder = holder;
        p_.buffers.push_back(b);
        return static_cast<int>(p_.buffers.size()) - 1;
    }

    Value fresh(const Shape& shape, int op, BufferHolder holder, bool whole_step = false) {
        std::vector<const Shape*> leaves;
        shape.leaves(leaves);
        Value v;
        v.reserve(leaves.size());
        for (const Shape* leaf : leaves) {
            const bool storage = leaf->is_array();
            const int b = storage ? new_buffer(*leaf, whole_step ? -1 : op, holder) : -1;
            v.push_back({b, op});
        }
        return v;
    }

    void read(const Value& v, int op) {
        for (const Leaf& leaf : v) {
            if (leaf.buffer < 0) continue;
            parallel::Buffer& b = p_.buffers[static_cast<std::size_t>(leaf.buffer)];
            if (b.first_op < 0 && b.last_op < 0) continue;  // held for the whole step
            b.last_op = std::max(b.last_op, op);
        }
    }

    void write_into(int buffer, int op) {
        parallel::Buffer& b = p_.buffers[static_cast<std::size_t>(buffer)];
        if (b.first_op < 0 && b.last_op < 0) return;
        b.last_op = std::max(b.last_op, op);
    }

    static void add_producers(const Value& v, parallel::OpDeps& deps) {
        for (const Leaf& leaf : v) {
            if (leaf.producer < 0) continue;
            if (std::find(deps.begin(), deps.end(), leaf.producer) == deps.end())
                deps.push_back(leaf.producer);
        }
    }

    int emit(DeviceOp op) {
        if (p_.ops.size() >= kMaxOps)
            lower_error(m_, nullptr,
                        fmt::format("the module runs more than {} kernels per step on each device (loops "
                                    "counted by their trips): too many to simulate one by one",
                                    kMaxOps));
        p_.ops.push_back(std::move(op));
        return static_cast<int>(p_.ops.size()) - 1;
    }

    std::string_view name_of(const Instruction& inst) {
        auto found = interned_.find(&inst);
        if (found != interned_.end()) return found->second;
        std::string_view stored = names_->add(inst.name);
        interned_.emplace(&inst, stored);
        return stored;
    }

    // A kernel on the compute stream: `inst` of computation `c`, its operands' values given.
    Value emit_compute(const Computation& c, const Instruction& inst,
                       const std::vector<const Value*>& operands, const std::vector<int>& targets,
                       bool async = false) {
        // Priced once per instruction, however often its loop runs (library calls parse JSON).
        auto [cached, added] = works_.try_emplace(&inst);
        if (added) cached->second = work_.work(c, inst);
        const OpWork& w = cached->second;
        DeviceOp op;
        op.name = name_of(inst);
        op.category = w.flops > 0.0 ? OpCategory::matmul : OpCategory::fusion;
        phase_ = jax_names_ ? phase_of(inst.op_name, phase_) : Phase::forward;
        op.phase = phase_;
        op.layer = layer_;
        // An async kernel (fusion-start ... fusion-done) runs on a stream of its own, beside the
        // kernels scheduled between its start and its done.
        op.resource = async ? async_resource() : 0;
        op.flops = w.flops;
        op.bytes = w.bytes;
        op.output_bytes = inst.shape.bytes();
        if (w.flops > 0.0) {
            op.mm_batch = w.mm_batch;
            op.mm_m = w.mm_m;
            op.mm_n = w.mm_n;
            op.mm_k = w.mm_k;
            const double shape_flops = 2.0 * w.mm_batch * w.mm_m * w.mm_n * w.mm_k;
            op.flop_scale = shape_flops > 0.0 ? w.flops / shape_flops : 1.0;
        }
        for (const Value* v : operands) add_producers(*v, op.deps);
        if (!async) {
            for (int barrier : sync_barrier_) op.deps.push_back(barrier);
            sync_barrier_.clear();
        }
        const int index = emit(std::move(op));
        if (!async) last_compute_ = index;
        for (const Value* v : operands) read(*v, index);
        return outputs(inst.shape, index, w.in_place, operands, targets, BufferHolder::temporaries);
    }

    // The value an op writes: in place where it updates an operand, into a target buffer where its
    // leaf must land there, else a buffer of its own.
    Value outputs(const Shape& shape, int op,
                  const std::vector<std::pair<std::size_t, std::size_t>>& in_place,
                  const std::vector<const Value*>& operands, const std::vector<int>& targets,
                  BufferHolder holder) {
        std::vector<const Shape*> leaves;
        shape.leaves(leaves);
        Value out(leaves.size());
        for (std::size_t l = 0; l < leaves.size(); ++l) {
            int buffer = -1;
            for (auto [leaf, operand] : in_place) {
                if (leaf == l && operand < operands.size() && operands[operand]->size() == 1 &&
                    (*operands[operand])[0].buffer >= 0)
                    buffer = (*operands[operand])[0].buffer;
            }
            if (buffer < 0 && l < targets.size() && targets[l] >= 0) buffer = targets[l];
            if (buffer >= 0) {
                write_into(buffer, op);
            } else if (leaves[l]->is_array()) {
                buffer = new_buffer(*leaves[l], op, holder);
            }
            out[l] = {buffer, op};
        }
        return out;
    }

    int async_resource() {
        if (async_resource_ < 0) {
            p_.resources.push_back(parallel::Resource{"compute:async", parallel::ResourceKind::compute, -1});
            async_resource_ = static_cast<int>(p_.resources.size()) - 1;
        }
        return async_resource_;
    }

    int comm_axis(const std::vector<std::vector<std::int64_t>>& groups, const std::string& name,
                  const Instruction& inst) {
        Placement::Parts parts = placement_->parts_of(groups.front());
        if (!parts.exact && !inexact_noted_) {
            notes_.push_back(fmt::format(
                "replica groups of {} are not evenly spaced lines of the torus; their collectives run "
                "over the lines that span them",
                inst.name));
            inexact_noted_ = true;
        }
        const auto size = static_cast<int>(groups.front().size());
        for (std::size_t a = 0; a < p_.comm_axes.size(); ++a) {
            if (p_.comm_axes[a].parts == parts.parts && p_.comm_axes[a].size == size)
                return static_cast<int>(a);
        }
        parallel::CommAxis axis;
        axis.name = name;
        axis.kind = parallel::ResourceKind::ici;
        axis.size = size;
        axis.parts = parts.parts;
        p_.comm_axes.push_back(axis);
        const int index = static_cast<int>(p_.comm_axes.size()) - 1;
        p_.resources.push_back(parallel::Resource{"ici:" + name, parallel::ResourceKind::ici, index});
        axis_resource_.push_back(static_cast<int>(p_.resources.size()) - 1);
        return index;
    }

    static std::string group_name(const Instruction& inst) {
        const ReplicaGroups& g = inst.replica_groups;
        if (g.form == ReplicaGroups::Form::mesh_axes) {
            std::vector<std::string> names;
            for (const auto& a : g.axes) {
                names.push_back(a.pre_size > 0
                                    ? fmt::format("{}:({}){}", g.mesh[static_cast<std::size_t>(a.axis)].name,
                                                  a.pre_size, a.size)
                                    : g.mesh[static_cast<std::size_t>(a.axis)].name);
            }
            return fmt::format("{}", fmt::join(names, ","));
        }
        std::string text = g.text;
        if (!inst.source_target_pairs.empty()) {
            text = "pairs{";
            for (std::size_t i = 0; i < inst.source_target_pairs.size() && i < 4; ++i)
                text += fmt::format("{}{{{},{}}}", i ? "," : "", inst.source_target_pairs[i].first,
                                    inst.source_target_pairs[i].second);
            text += inst.source_target_pairs.size() > 4 ? ",...}" : "}";
        }
        if (text.size() > 48) text = text.substr(0, 45) + "...";
        return text.empty() ? std::string("all") : text;
    }

    // The devices of a collective-permute's longest ring (or chain) of source-target pairs: what
    // it moves on the torus. Devices sending to themselves move nothing.
    static std::vector<std::int64_t> permute_group(const Instruction& inst) {
        std::unordered_map<std::int64_t, std::int64_t> next;
        for (auto [s, t] : inst.source_target_pairs)
            if (s != t) next.emplace(s, t);
        std::vector<std::int64_t> best;
        for (auto [s, t] : inst.source_target_pairs) {
            if (s == t) continue;
            std::vector<std::int64_t> group;
            std::int64_t device = s;
            while (group.size() <= next.size() &&
                   std::find(group.begin(), group.end(), device) == group.end()) {
                group.push_back(device);
                auto it = next.find(device);
                if (it == next.end()) break;
                device = it->second;
            }
            if (group.size() > best.size()) best = std::move(group);
        }
        return best;
    }

    // A collective: an op on the ICI resource of its groups. Synchronous ones hold the compute
    // stream (they wait for the compute before them, the compute after waits for them).
    Value emit_collective(const Computation& c, const Instruction& inst, Opcode base,
                          const std::vector<const Value*>& operands, const std::vector<int>& targets,
                          const Shape& output, bool async) {
        const auto kind = collective_kind(base);
        std::vector<std::vector<std::int64_t>> groups;
        if (base == Opcode::collective_permute) {
            auto ring = permute_group(inst);
            if (ring.size() > 1) groups.push_back(std::move(ring));
        } else {
            groups = inst.replica_groups.expand(placement_->devices());
        }
        if (!kind || groups.empty() || groups.front().size() <= 1) {
            // One device in the group: nothing moves. The result is the operand.
            if (operands.size() == 1 && operands[0]->size() == output.leaf_count()) return *operands[0];
            return emit_compute(c, inst, operands, targets);
        }
        double operand_bytes = 0.0;
        for (std::size_t i = 0; i < inst.operands.size(); ++i)
            operand_bytes += at(c, inst.operands[i]).shape.bytes();
        if (base == Opcode::ragged_all_to_all)
            operand_bytes = inst.operands.empty() ? 0.0 : at(c, inst.operands[0]).shape.bytes();
        const double bytes =
            *kind == collectives::CollectiveKind::all_gather ? output.bytes() : operand_bytes;
        const int axis = comm_axis(groups, group_name(inst), inst);
        DeviceOp op;
        op.name = name_of(inst);
        op.category = parallel::category_of(*kind);
        op.collective = *kind;
        op.comm_axis = axis;
        op.collective_bytes = bytes;
        op.resource = axis_resource_[static_cast<std::size_t>(axis)];
        op.phase = jax_names_ ? phase_of(inst.op_name, phase_) : Phase::forward;
        op.layer = layer_;
        for (const Value* v : operands) add_producers(*v, op.deps);
        if (!async) {
            // In program order on the compute stream: after the compute and the synchronous
            // collectives before it.
            if (last_compute_ >= 0 &&
                std::find(op.deps.begin(), op.deps.end(), last_compute_) == op.deps.end())
                op.deps.push_back(last_compute_);
            for (int barrier : sync_barrier_) op.deps.push_back(barrier);
        }
        const int index = emit(std::move(op));
        for (const Value* v : operands) read(*v, index);
        if (!async) sync_barrier_.push_back(index);
        const std::string kind_name(collectives::collective_name(*kind));
        collective_bytes_[kind_name] += bytes;
        ++collective_counts_[kind_name];
        return outputs(output, index, {}, operands, targets,
                       *kind == collectives::CollectiveKind::all_gather ? BufferHolder::gathered_weights
                                                                        : BufferHolder::collective_buffers);
    }

    // A copy between memory spaces: HBM <-> pinned host memory over the host link, a copy of its
    // own otherwise.
    Value emit_copy(const Computation& c, const Instruction& inst, const Value& operand, const Shape& output,
                    const std::vector<int>& targets) {
        const Shape& source = at(c, inst.operands[0]).shape;
        const bool to_host = output.memory_space == kHostMemorySpace;
        if (!to_host && source.memory_space != kHostMemorySpace) {
            auto [copy, added] = wrapped_.try_emplace(&inst);
            if (added) {
                copy->second = inst;
                copy->second.opcode = Opcode::copy;
                copy->second.shape = output;
            }
            return emit_compute(c, copy->second, {&operand}, targets, /*async=*/true);
        }
        if (transfer_resource_ < 0) {
            p_.resources.push_back(
                parallel::Resource{"host-transfer", parallel::ResourceKind::host_transfer, -1});
            transfer_resource_ = static_cast<int>(p_.resources.size()) - 1;
        }
        DeviceOp op;
        op.name = name_of(inst);
        op.category = OpCategory::copy;
        op.to_host = to_host;
        op.bytes = output.bytes();
        op.resource = transfer_resource_;
        op.phase = jax_names_ ? phase_of(inst.op_name, phase_) : Phase::forward;
        op.layer = layer_;
        add_producers(operand, op.deps);
        const int index = emit(std::move(op));
        read(operand, index);
        return outputs(output, index, {}, {&operand}, targets, BufferHolder::temporaries);
    }

    // ---------------------------------------------------------------- control flow

    std::int64_t trips(const Computation& c, const Instruction& loop) {
        std::string why;
        auto n = trip_count(m_, c, loop, why);
        if (!n) lower_error(m_, &loop, fmt::format("cannot tell how many times the loop runs: {}", why));
        return *n;
    }

    // The static work of a computation (FLOPs, then bytes), loops and calls included: a conditional
    // runs its costliest branch.
    std::pair<double, double> static_work(int ci, int depth = 0) {
        auto found = static_work_.find(ci);
        if (found != static_work_.end()) return found->second;
        std::pair<double, double> sum{0.0, 0.0};
        const Computation& c = m_.computations[static_cast<std::size_t>(ci)];
        for (const Instruction& inst : c.instructions) {
            if (depth > 32) break;
            if (inst.opcode == Opcode::while_) {
                std::string why;
                const double n = static_cast<double>(trip_count(m_, c, inst, why).value_or(1));
                auto body = static_work(inst.body, depth + 1);
                sum.first += n * body.first;
                sum.second += n * body.second;
            } else if (inst.opcode == Opcode::call || inst.opcode == Opcode::conditional) {
                std::pair<double, double> best{0.0, 0.0};
                for (int callee : inst.called) best = std::max(best, static_work(callee, depth + 1));
                sum.first += best.first;
                sum.second += best.second;
            } else if (!is_alias(inst.opcode) && inst.opcode != Opcode::constant) {
                const OpWork w = work_.work(c, inst);
                sum.first += w.flops;
                sum.second += w.bytes;
            }
        }
        return static_work_.emplace(ci, sum).first->second;
    }

    Value evaluate(int ci, const std::vector<Value>& args, const std::vector<int>& targets, bool async) {
        const Computation& c = m_.computations[static_cast<std::size_t>(ci)];
        const auto& flows = root_flows(ci);
        std::vector<Value> values(c.instructions.size());
        std::unordered_map<int, Value> async_outputs;
        for (std::size_t i = 0; i < c.instructions.size(); ++i) {
            const Instruction& inst = c.instructions[i];
            std::vector<int> inst_targets;
            if (!targets.empty()) {
                const auto& f = flows[i];
                inst_targets.assign(f.size(), -1);
                for (std::size_t l = 0; l < f.size(); ++l) {
                    if (f[l] >= 0 && static_cast<std::size_t>(f[l]) < targets.size())
                        inst_targets[l] = targets[static_cast<std::size_t>(f[l])];
                }
            }
            std::vector<const Value*> operands;
            operands.reserve(inst.operands.size());
            for (int o : inst.operands) operands.push_back(&values[static_cast<std::size_t>(o)]);
            Value& out = values[i];
            switch (inst.opcode) {
                case Opcode::parameter: {
                    const auto n = static_cast<std::size_t>(inst.parameter_number);
                    out = n < args.size() ? args[n] : fresh(inst.shape, -1, BufferHolder::temporaries, true);
                    break;
                }
                case Opcode::get_tuple_element: {
                    const Value& t = *operands[0];
                    const Shape& tuple = at(c, inst.operands[0]).shape;
                    const std::size_t first =
                        tuple.first_leaf_of_element(static_cast<std::size_t>(inst.tuple_index));
                    const std::size_t n = inst.shape.leaf_count();
                    for (std::size_t l = first; l < first + n && l < t.size(); ++l) out.push_back(t[l]);
                    break;
                }
                case Opcode::tuple:
                    for (const Value* v : operands) out.insert(out.end(), v->begin(), v->end());
                    break;
                case Opcode::bitcast:
                case Opcode::opt_barrier:
                case Opcode::add_dependency:
                case Opcode::domain:
                    if (!operands.empty()) out = *operands[0];
                    break;
                case Opcode::after_all:
                case Opcode::partition_id:
                case Opcode::replica_id:
                    out = fresh(inst.shape, last_compute_, BufferHolder::temporaries);
                    break;
                case Opcode::constant: {
                    // Constants are allocated once, for the whole step, however often their loop runs.
                    auto [it, added] = constants_.try_emplace(&inst);
                    if (added) it->second = fresh(inst.shape, -1, BufferHolder::temporaries, true);
                    out = it->second;
                    break;
                }
                case Opcode::while_: {
                    const Value& init = *operands[0];
                    const std::int64_t n = trips(c, inst);
                    ++loops_;
                    Value state = init;
                    const int outer_layer = layer_;
                    for (std::int64_t it = 0; it < n; ++it) {
                        std::vector<int> state_buffers;
                        for (const Leaf& leaf : state) {
                            state_buffers.push_back(leaf.buffer);
                            if (leaf.buffer >= 0) {
                                parallel::Buffer& b = p_.buffers[static_cast<std::size_t>(leaf.buffer)];
                                if (b.holder == BufferHolder::temporaries)
                                    b.holder = BufferHolder::activations;
                            }
                        }
                        layer_ = static_cast<int>(it);
                        state = evaluate(inst.body, {state}, state_buffers, async);
                    }
                    layer_ = outer_layer;
                    out = std::move(state);
                    break;
                }
                case Opcode::call:
                    out = evaluate(inst.called[0], values_of(operands), inst_targets, async);
                    break;
                case Opcode::conditional: {
                    // The branch that runs is decided at run time: the costliest one is priced.
                    std::size_t best = 0;
                    std::pair<double, double> most{-1.0, -1.0};
                    for (std::size_t b = 0; b < inst.called.size(); ++b) {
                        auto w = static_work(inst.called[b]);
                        if (w > most) {
                            most = w;
                            best = b;
                        }
                    }
                    if (!conditional_noted_) {
                        notes_.push_back(
                            "a conditional runs its costliest branch (which one runs is decided at run "
                            "time)");
                        conditional_noted_ = true;
                    }
                    std::vector<Value> branch_args;
                    if (best + 1 < operands.size()) branch_args.push_back(*operands[best + 1]);
                    out = evaluate(inst.called[best], branch_args, inst_targets, async);
                    break;
                }
                case Opcode::custom_call:
                    if (is_annotation_call(inst)) {
                        if (!operands.empty()) out = *operands[0];
                        break;
                    }
                    out = emit_compute(c, inst, operands, inst_targets, async);
                    break;
                case Opcode::async_start:
                    async_outputs[static_cast<int>(i)] = async_start(c, inst, operands, inst_targets);
                    out = async_start_value(inst, operands, async_outputs[static_cast<int>(i)]);
                    break;
                case Opcode::all_gather_start:
                case Opcode::all_reduce_start:
                case Opcode::collective_permute_start: {
                    const Shape output = start_output(inst);
                    Value result =
                        emit_collective(c, inst, base_of_async(inst.opcode), operands, {}, output, true);
                    async_outputs[static_cast<int>(i)] = result;
                    out = async_start_value(inst, operands, result);
                    break;
                }
                case Opcode::copy_start: {
                    const Shape output =
                        inst.shape.is_tuple() && !inst.shape.tuple.empty() ? inst.shape.tuple[0] : inst.shape;
                    Value result = emit_copy(c, inst, *operands[0], output, {});
                    async_outputs[static_cast<int>(i)] = result;
                    out = result;
                    break;
                }
                case Opcode::async_update:
                    if (!operands.empty()) out = *operands[0];
                    if (auto it = async_outputs.find(inst.operands[0]); it != async_outputs.end())
                        async_outputs[static_cast<int>(i)] = it->second;
                    break;
                case Opcode::async_done:
                case Opcode::all_gather_done:
                case Opcode::all_reduce_done:
                case Opcode::collective_permute_done:
                case Opcode::copy_done: {
                    auto it = async_outputs.find(inst.operands[0]);
                    out = it != async_outputs.end()
                              ? it->second
                              : fresh(inst.shape, last_compute_, BufferHolder::temporaries);
                    break;
                }
                case Opcode::send:
                case Opcode::recv:
                case Opcode::send_done:
                case Opcode::recv_done:
                    if (!send_recv_noted_) {
                        notes_.push_back("point-to-point send/recv are not priced");
                        send_recv_noted_ = true;
                    }
                    out = fresh(inst.shape, last_compute_, BufferHolder::temporaries);
                    break;
                default:
                    if (is_collective(inst.opcode)) {
                        out =
                            emit_collective(c, inst, inst.opcode, operands, inst_targets, inst.shape, async);
                    } else {
                        out = emit_compute(c, inst, operands, inst_targets, async);
                    }
                    break;
            }
            if (out.size() != inst.shape.leaf_count()) out.resize(inst.shape.leaf_count());
        }
        return values[static_cast<std::size_t>(c.root)];
    }

    static std::vector<Value> values_of(const std::vector<const Value*>& operands) {
        std::vector<Value> out;
        out.reserve(operands.size());
        for (const Value* v : operands) out.push_back(*v);
        return out;
    }

    // The shape an async start's op produces: all-gather-start (operands, results), collective-
    // permute-start (operand, result, contexts...), all-reduce-start the result itself.
    static Shape start_output(const Instruction& inst) {
        if (inst.opcode == Opcode::all_reduce_start || !inst.shape.is_tuple() || inst.shape.tuple.size() < 2)
            return inst.shape;
        return inst.shape.tuple[1];
    }

    // The value of the start instruction itself: (operands, result, contexts) when it is a tuple of
    // that form, else the result.
    static Value async_start_value(const Instruction& inst, const std::vector<const Value*>& operands,
                                   const Value& result) {
        if (inst.opcode == Opcode::all_reduce_start || !inst.shape.is_tuple() || inst.shape.tuple.size() < 2)
            return result;
        Value v;
        for (const Value* o : operands) v.insert(v.end(), o->begin(), o->end());
        v.resize(inst.shape.tuple[0].leaf_count());
        v.insert(v.end(), result.begin(), result.end());
        v.resize(inst.shape.leaf_count());
        return v;
    }

    // async-start: the wrapped op runs from here to its async-done, off the compute stream when it
    // is a collective.
    Value async_start(const Computation& c, const Instruction& inst,
                      const std::vector<const Value*>& operands, const std::vector<int>& targets) {
        (void)targets;
        if (inst.wrapped) {
            auto cached = wrapped_.find(&inst);
            if (cached == wrapped_.end()) {
                Instruction op = inst;
                op.opcode = *inst.wrapped;
                op.wrapped.reset();
                op.shape = start_output(inst);
                cached = wrapped_.emplace(&inst, std::move(op)).first;
            }
            const Instruction& op = cached->second;
            if (is_collective(op.opcode))
                return emit_collective(c, op, op.opcode, operands, {}, op.shape, true);
            return emit_compute(c, op, operands, {}, true);
        }
        return evaluate(inst.called[0], values_of(operands), {}, true);
    }

    const Module& m_;
    const LowerOptions& o_;
    WorkModel work_;
    std::shared_ptr<parallel::NameStore> names_;
    std::unique_ptr<Placement> placement_;
    parallel::DeviceProgram p_;
    std::unordered_map<const Instruction*, std::string_view> interned_;
    std::unordered_map<const Instruction*, Instruction> wrapped_;
    std::unordered_map<const Instruction*, Value> constants_;
    std::unordered_map<const Instruction*, OpWork> works_;
    std::unordered_map<int, std::vector<std::vector<int>>> flows_;
    std::unordered_map<int, std::pair<double, double>> static_work_;
    std::vector<int> axis_resource_;
    std::vector<int> sync_barrier_;
    std::map<std::string, double> collective_bytes_;
    std::map<std::string, int> collective_counts_;
    std::vector<std::string> notes_;
    int host_op_ = -1;
    int last_compute_ = -1;
    int transfer_resource_ = -1;
    int async_resource_ = -1;
    int layer_ = -1;
    int loops_ = 0;
    Phase phase_ = Phase::forward;
    bool jax_names_ = false;
    bool inexact_noted_ = false;
    bool conditional_noted_ = false;
    bool send_recv_noted_ = false;
};

}  // namespace

std::optional<std::int64_t> trip_count(const Module& module, const Computation& computation,
                                       const Instruction& loop, std::string& why) {
    if (loop.known_trip_count >= 0) return loop.known_trip_count;
    // The condition `induction < N` (or <=, >, >=, !=) on a tuple element that starts at a constant
    // and moves by a constant step each iteration (what jax.lax.scan and fori_loop lower to).
    const Computation& cond = module.computations[static_cast<std::size_t>(loop.condition)];
    const Computation& body = module.computations[static_cast<std::size_t>(loop.body)];
    const Instruction& root = at(cond, cond.root);
    if (root.opcode != Opcode::compare || root.operands.size() != 2) {
        why = "no known_trip_count in its backend_config, and its condition is not a comparison";
        return std::nullopt;
    }
    std::string direction = root.comparison_direction;
    auto index = induction_index(cond, root.operands[0]);
    auto bound = constant_of(cond, root.operands[1]);
    if (!index || !bound) {
        index = induction_index(cond, root.operands[1]);
        bound = constant_of(cond, root.operands[0]);
        if (direction == "LT")
            direction = "GT";
        else if (direction == "GT")
            direction = "LT";
        else if (direction == "LE")
            direction = "GE";
        else if (direction == "GE")
            direction = "LE";
    }
    if (!index || !bound) {
        why =
            "no known_trip_count in its backend_config, and its condition does not compare a loop "
            "variable with a constant";
        return std::nullopt;
    }
    // Start: element `index` of the loop's initial tuple, when that is a constant.
    std::int64_t start = 0;
    const Computation* outer = &computation;
    const Instruction& init = at(*outer, loop.operands[0]);
    if (init.opcode == Opcode::tuple && *index < static_cast<std::int64_t>(init.operands.size())) {
        if (auto v = constant_of(*outer, init.operands[static_cast<std::size_t>(*index)])) start = *v;
    }
    // Step: the body's new value of the element, element + constant.
    std::int64_t step = 1;
    const Instruction& body_root = at(body, body.root);
    if (body_root.opcode == Opcode::tuple && *index < static_cast<std::int64_t>(body_root.operands.size())) {
        const Instruction& next =
            at(body, through_scalar_views(body, body_root.operands[static_cast<std::size_t>(*index)]));
        if ((next.opcode == Opcode::add || next.opcode == Opcode::subtract) && next.operands.size() == 2) {
            auto c0 = constant_of(body, next.operands[0]);
            auto c1 = constant_of(body, next.operands[1]);
            if (c1)
                step = next.opcode == Opcode::add ? *c1 : -*c1;
            else if (c0 && next.opcode == Opcode::add)
                step = *c0;
        }
    }
    if (step == 0) {
        why = "its loop variable does not change";
        return std::nullopt;
    }
    const double span = static_cast<double>(*bound - start);
    double n = 0.0;
    if (direction == "LT" && step > 0)
        n = std::ceil(span / static_cast<double>(step));
    else if (direction == "LE" && step > 0)
        n = std::floor(span / static_cast<double>(step)) + 1.0;
    else if (direction == "GT" && step < 0)
        n = std::ceil(-span / static_cast<double>(-step));
    else if (direction == "GE" && step < 0)
        n = std::floor(-span / static_cast<double>(-step)) + 1.0;
    else if (direction == "NE" && span / static_cast<double>(step) >= 0.0)
        n = span / static_cast<double>(step);
    else {
        why = fmt::format("its condition ({} against {}) with a step of {} never ends or never starts",
                          direction, *bound, step);
        return std::nullopt;
    }
    return static_cast<std::int64_t>(std::max(0.0, n));
}

LoweredModule lower_module(const Module& module, const LowerOptions& options) {
    return Lowering(module, options).run();
}

}  // namespace podsim::hlo
