#include "hlo/proto_reader.hpp"

#include <algorithm>
#include <cctype>
#include <limits>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "core/diagnostics.hpp"
#include "core/protobuf_wire.hpp"
#include "hlo/module_checks.hpp"

// Field numbers are those of xla/service/hlo.proto and xla/xla_data.proto.

namespace podsim::hlo {
namespace {

using core::Wire;

std::vector<std::int64_t> integers(Wire& w, int type) {
    std::vector<std::int64_t> out;
    w.append_integers(type, out);
    return out;
}

Shape read_shape(Wire w, int depth = 0) {
    // Tuples nest at most this deep: XLA's own modules nest two or three levels.
    if (depth > 64) core::wire_error(w.path(), w.pos(), "tuple shapes nested more than 64 deep");
    Shape s;
    while (!w.done()) {
        auto [f, t] = w.key();
        if (f == 2 && t == 0) {
            const std::int64_t number = w.int64();
            auto type = element_type_from_proto(number);
            if (!type)
                core::wire_error(w.path(), w.pos(), fmt::format("unknown element type number {}", number));
            s.type = *type;
        } else if (f == 3) {
            w.append_integers(t, s.dims);
        } else if (f == 4 && t == 2) {
            s.tuple.push_back(read_shape(w.sub(), depth + 1));
        } else if (f == 5 && t == 2) {
            Wire layout = w.sub();
            while (!layout.done()) {
                auto [lf, lt] = layout.key();
                if (lf == 1) {
                    layout.append_integers(lt, s.minor_to_major);
                } else if (lf == 6 && lt == 2 && s.tile.empty()) {
                    Wire tile = layout.sub();
                    while (!tile.done()) {
                        auto [tf, tt] = tile.key();
                        if (tf == 1) {
                            tile.append_integers(tt, s.tile);
                        } else {
                            tile.skip(tt);
                        }
                    }
                } else if (lf == 7 && lt == 0) {
                    s.element_bits = layout.int64();
                } else if (lf == 8 && lt == 0) {
                    s.memory_space = layout.int64();
                } else {
                    layout.skip(lt);
                }
            }
        } else {
            w.skip(t);
        }
    }
    for (std::int64_t d : s.dims) {
        if (d < 0 || d > (std::int64_t{1} << 40))
            core::wire_error(w.path(), w.pos(), fmt::format("dimension {} is out of range", d));
    }
    return s;
}

FusionKind fusion_kind(const std::string& kind) {
    if (kind == "kLoop") return FusionKind::loop;
    if (kind == "kInput") return FusionKind::input;
    if (kind == "kOutput") return FusionKind::output;
    if (kind == "kCustom") return FusionKind::custom;
    return FusionKind::none;
}

// As the text reader reads it: kNoTripCount without one, kBadTripCount where "n" holds no whole
// number of iterations.
std::int64_t known_trip_count(const std::string& config) {
    const std::size_t at = config.find("known_trip_count");
    if (at == std::string::npos) return kNoTripCount;
    std::size_t i = config.find("\"n\"", at);
    if (i == std::string::npos) return kNoTripCount;
    i += 3;
    while (i < config.size() &&
           (config[i] == ' ' || config[i] == ':' || config[i] == '"' || config[i] == '\\'))
        ++i;
    std::int64_t value = 0;
    bool digits = false;
    while (i < config.size() && config[i] >= '0' && config[i] <= '9') {
        if (value > (std::numeric_limits<std::int64_t>::max() - 9) / 10) return kBadTripCount;
        value = value * 10 + (config[i++] - '0');
        digits = true;
    }
    const bool ends = i == config.size() || !std::isalnum(static_cast<unsigned char>(config[i]));
    return digits && ends ? value : kBadTripCount;
}

struct RawInstruction {
    Instruction inst;
    std::int64_t id = 0;
    std::vector<std::int64_t> operand_ids;
    std::vector<std::int64_t> called_ids;
};

struct RawComputation {
    Computation computation;
    std::int64_t id = 0;
    std::int64_t root_id = -1;
    std::vector<RawInstruction> instructions;
};

std::vector<std::int64_t> replica_ids(Wire w) {
    std::vector<std::int64_t> ids;
    while (!w.done()) {
        auto [f, t] = w.key();
        if (f == 1) {
            w.append_integers(t, ids);
        } else {
            w.skip(t);
        }
    }
    return ids;
}

RawInstruction read_instruction(Wire w) {
    RawInstruction raw;
    Instruction& inst = raw.inst;
    std::string opcode;
    std::string kind;
    std::string backend_config;
    std::vector<std::vector<std::int64_t>> groups;
    while (!w.done()) {
        auto [f, t] = w.key();
        switch (f) {
            case 1:
                if (t != 2) break;
                inst.name = w.bytes();
                continue;
            case 2:
                if (t != 2) break;
                opcode = w.bytes();
                continue;
            case 3:
                if (t != 2) break;
                inst.shape = read_shape(w.sub());
                continue;
            case 7: {
                if (t != 2) break;
                Wire meta = w.sub();
                while (!meta.done()) {
                    auto [mf, mt] = meta.key();
                    if (mf == 2 && mt == 2) {
                        inst.op_name = meta.bytes();
                    } else {
                        meta.skip(mt);
                    }
                }
                continue;
            }
            case 8: {  // literal: a scalar integer's value (s32s 4, s64s 5, u32s 6, u64s 7)
                if (t != 2) break;
                Wire literal = w.sub();
                while (!literal.done()) {
                    auto [lf, lt] = literal.key();
                    if (lf >= 4 && lf <= 7) {
                        auto values = integers(literal, lt);
                        if (values.size() == 1) inst.integer_value = values[0];
                    } else {
                        literal.skip(lt);
                    }
                }
                continue;
            }
            case 9:
                if (t != 0) break;
                inst.parameter_number = w.int64();
                continue;
            case 11:
                if (t != 2) break;
                kind = w.bytes();
                continue;
            case 13:
                if (t != 0) break;
                inst.tuple_index = w.int64();
                continue;
            case 14:
                w.append_integers(t, inst.dimensions);
                continue;
            case 16: {  // convolution_dimension_numbers: kernel_output_feature_dimension 4
                if (t != 2) break;
                Wire conv = w.sub();
                inst.kernel_output_feature_dim = 0;
                while (!conv.done()) {
                    auto [cf, ct] = conv.key();
                    if (cf == 4 && ct == 0) {
                        inst.kernel_output_feature_dim = conv.int64();
                    } else {
                        conv.skip(ct);
                    }
                }
                continue;
            }
            case 26:
                if (t != 0) break;
                inst.channel_id = w.int64();
                continue;
            case 28:
                if (t != 2) break;
                inst.custom_call_target = w.bytes();
                continue;
            case 30: {  // dot_dimension_numbers
                if (t != 2) break;
                Wire dot = w.sub();
                while (!dot.done()) {
                    auto [df, dt] = dot.key();
                    if (df == 1) {
                        dot.append_integers(dt, inst.dot.lhs_contracting);
                    } else if (df == 2) {
                        dot.append_integers(dt, inst.dot.rhs_contracting);
                    } else if (df == 3) {
                        dot.append_integers(dt, inst.dot.lhs_batch);
                    } else if (df == 4) {
                        dot.append_integers(dt, inst.dot.rhs_batch);
                    } else {
                        dot.skip(dt);
                    }
                }
                continue;
            }
            case 35:
                if (t != 0) break;
                raw.id = w.int64();
                continue;
            case 36:
                w.append_integers(t, raw.operand_ids);
                continue;
            case 38:
                w.append_integers(t, raw.called_ids);
                continue;
            case 43:
                if (t != 2) break;
                backend_config = w.bytes();
                continue;
            case 49:  // replica_groups (deprecated place)
                if (t != 2) break;
                groups.push_back(replica_ids(w.sub()));
                continue;
            case 50:
                if (t != 0) break;
                inst.feature_group_count = std::max<std::int64_t>(1, w.int64());
                continue;
            case 52: {
                if (t != 2) break;
                Wire pair = w.sub();
                std::int64_t source = 0, target = 0;
                while (!pair.done()) {
                    auto [pf, pt] = pair.key();
                    if (pf == 1 && pt == 0) {
                        source = pair.int64();
                    } else if (pf == 2 && pt == 0) {
                        target = pair.int64();
                    } else {
                        pair.skip(pt);
                    }
                }
                if (source < 0 || target < 0 || source >= (1 << 20) || target >= (1 << 20))
                    core::wire_error(w.path(), w.pos(), "a source-target pair names a device out of range");
                inst.source_target_pairs.emplace_back(source, target);
                continue;
            }
            case 58:
                if (t != 0) break;
                inst.batch_group_count = std::max<std::int64_t>(1, w.int64());
                continue;
            case 63:
                if (t != 2) break;
                inst.comparison_direction = w.bytes();
                continue;
            case 71:
                if (t != 0) break;
                inst.use_global_device_ids = w.varint() != 0;
                continue;
            case 74: {  // output_operand_aliasing
                if (t != 2) break;
                Wire alias = w.sub();
                OutputOperandAlias a;
                while (!alias.done()) {
                    auto [af, at] = alias.key();
                    if (af == 1) {
                        alias.append_integers(at, a.output_index);
                    } else if (af == 2 && at == 0) {
                        a.operand = alias.int64();
                    } else if (af == 3) {
                        alias.append_integers(at, a.operand_index);
                    } else {
                        alias.skip(at);
                    }
                }
                inst.output_operand_aliasing.push_back(std::move(a));
                continue;
            }
            case 87: {  // collective_device_list: replica_groups 1, iota_replica_group_list 2
                if (t != 2) break;
                Wire list = w.sub();
                while (!list.done()) {
                    auto [lf, lt] = list.key();
                    if (lf == 1 && lt == 2) {
                        groups.push_back(replica_ids(list.sub()));
                    } else if (lf == 2 && lt == 2) {
                        Wire iota = list.sub();
                        ReplicaGroups& g = inst.replica_groups;
                        g.form = ReplicaGroups::Form::iota;
                        while (!iota.done()) {
                            auto [i_f, i_t] = iota.key();
                            if (i_f == 1 && i_t == 0) {
                                g.num_groups = iota.int64();
                            } else if (i_f == 2 && i_t == 0) {
                                g.group_size = iota.int64();
                            } else if (i_f == 3) {
                                iota.append_integers(i_t, g.reshape_dims);
                            } else if (i_f == 4) {
                                iota.append_integers(i_t, g.transpose);
                            } else {
                                iota.skip(i_t);
                            }
                        }
                    } else {
                        list.skip(lt);
                    }
                }
                continue;
            }
            default:
                break;
        }
        w.skip(t);
    }
    auto parsed = parse_opcode(opcode);
    if (!parsed) {
        core::Diagnostics d;
        d.error({w.path(), 0, 0}, inst.name, fmt::format("unknown opcode '{}'", opcode));
        throw core::UserError(d);
    }
    inst.opcode = *parsed;
    // proto3 leaves zero values out: a missing index or parameter number is 0.
    if (inst.opcode == Opcode::get_tuple_element && inst.tuple_index < 0) inst.tuple_index = 0;
    if (inst.opcode == Opcode::parameter && inst.parameter_number < 0) inst.parameter_number = 0;
    inst.fusion_kind = fusion_kind(kind);
    if (inst.opcode == Opcode::while_) inst.known_trip_count = known_trip_count(backend_config);
    if (inst.opcode == Opcode::custom_call) inst.backend_config = std::move(backend_config);
    if (!groups.empty()) {
        inst.replica_groups.form = ReplicaGroups::Form::explicit_list;
        inst.replica_groups.lists = std::move(groups);
    }
    ReplicaGroups& g = inst.replica_groups;
    if (g.form == ReplicaGroups::Form::iota) {
        // Checked as the text reader checks them: the groups must cover the reshaped iota.
        std::int64_t n = 1;
        bool ok = !g.reshape_dims.empty() && g.num_groups > 0 && g.group_size > 0;
        for (std::int64_t d : g.reshape_dims) {
            if (d <= 0 || n > (std::int64_t{1} << 20) / d) ok = false;
            if (ok) n *= d;
        }
        std::vector<int> sorted = g.transpose;
        std::sort(sorted.begin(), sorted.end());
        for (std::size_t i = 0; i < sorted.size(); ++i) ok = ok && sorted[i] == static_cast<int>(i);
        ok = ok && (g.transpose.empty() || g.transpose.size() == g.reshape_dims.size()) &&
             g.num_groups * g.group_size == n;
        if (!ok) {
            core::Diagnostics d;
            d.error({w.path(), 0, 0}, inst.name, "iota replica groups that do not cover their devices");
            throw core::UserError(d);
        }
        g.text = fmt::format("[{},{}]<=[{}]", g.num_groups, g.group_size, fmt::join(g.reshape_dims, ","));
        if (!g.transpose.empty()) g.text += fmt::format("T({})", fmt::join(g.transpose, ","));
    } else if (g.form == ReplicaGroups::Form::explicit_list) {
        for (const auto& list : g.lists) {
            for (std::int64_t id : list) {
                if (id < 0 || id >= (1 << 20)) {
                    core::Diagnostics d;
                    d.error({w.path(), 0, 0}, inst.name, fmt::format("device id {} is out of range", id));
                    throw core::UserError(d);
                }
            }
        }
        std::string text = "{";
        for (std::size_t i = 0; i < g.lists.size() && i < 4; ++i)
            text += fmt::format("{}{{{}}}", i ? "," : "", fmt::join(g.lists[i], ","));
        g.text = text + (g.lists.size() > 4 ? ",...}" : "}");
    }
    return raw;
}

RawComputation read_computation(Wire w) {
    RawComputation raw;
    while (!w.done()) {
        auto [f, t] = w.key();
        if (f == 1 && t == 2) {
            raw.computation.name = w.bytes();
        } else if (f == 2 && t == 2) {
            raw.instructions.push_back(read_instruction(w.sub()));
        } else if (f == 5 && t == 0) {
            raw.id = w.int64();
        } else if (f == 6 && t == 0) {
            raw.root_id = w.int64();
        } else {
            w.skip(t);
        }
    }
    return raw;
}

BufferAssignment read_buffer_assignment(Wire w) {
    BufferAssignment a;
    while (!w.done()) {
        auto [f, t] = w.key();
        if (f == 1 && t == 2) {  // LogicalBufferProto: id 1, size 2
            Wire b = w.sub();
            std::int64_t id = 0, size = 0;
            while (!b.done()) {
                auto [bf, bt] = b.key();
                if (bf == 1 && bt == 0) {
                    id = b.int64();
                } else if (bf == 2 && bt == 0) {
                    size = b.int64();
                } else {
                    b.skip(bt);
                }
            }
            a.logical_buffer_size[id] = size;
        } else if (f == 3 && t == 2) {  // BufferAllocationProto
            Wire b = w.sub();
            BufferAssignment::Allocation alloc;
            while (!b.done()) {
                auto [bf, bt] = b.key();
                if (bt != 0) {
                    b.skip(bt);
                    continue;
                }
                const std::int64_t v = b.int64();
                switch (bf) {
                    case 1:
                        alloc.index = v;
                        break;
                    case 2:
                        alloc.size = v;
                        break;
                    case 3:
                        alloc.is_thread_local = v != 0;
                        break;
                    case 5:
                        alloc.is_entry_parameter = v != 0;
                        break;
                    case 6:
                        alloc.parameter_number = v;
                        break;
                    case 7:
                        alloc.maybe_live_out = v != 0;
                        break;
                    case 8:
                        alloc.color = v;
                        break;
                    case 11:
                        alloc.is_tuple = v != 0;
                        break;
                    case 12:
                        alloc.is_constant = v != 0;
                        break;
                    default:
                        break;
                }
            }
            a.allocations.push_back(alloc);
        } else if (f == 4 && t == 2) {  // HeapSimulatorTrace: events 1, buffer_allocation_index 3
            Wire tr = w.sub();
            BufferAssignment::Trace trace;
            while (!tr.done()) {
                auto [tf, tt] = tr.key();
                if (tf == 1 && tt == 2) {
                    Wire e = tr.sub();
                    BufferAssignment::Event event;
                    while (!e.done()) {
                        auto [ef, et] = e.key();
                        if (ef == 1 && et == 0) {
                            const std::int64_t kind = e.int64();
                            if (kind < 0 || kind > 2)
                                core::wire_error(e.path(), e.pos(), "unknown heap event kind");
                            event.kind = static_cast<BufferAssignment::EventKind>(kind);
                        } else if (ef == 2 && et == 0) {
                            event.buffer = e.int64();
                        } else if (ef == 5 && et == 0) {
                            event.share_with = e.int64();
                        } else {
                            e.skip(et);
                        }
                    }
                    trace.events.push_back(event);
                } else if (tf == 3 && tt == 0) {
                    trace.allocation = tr.int64();
                } else {
                    tr.skip(tt);
                }
            }
            a.traces.push_back(std::move(trace));
        } else {
            w.skip(t);
        }
    }
    return a;
}

class ModuleBuilder {
  public:
    ModuleBuilder(const std::string& path, Module& m) : path_(path), m_(m) {}

    void read_module(Wire w) {
        std::vector<RawComputation> raws;
        std::int64_t entry_id = -1;
        std::string entry_name;
        std::map<std::int64_t, std::vector<std::int64_t>> schedule;
        while (!w.done()) {
            auto [f, t] = w.key();
            if (f == 1 && t == 2) {
                m_.name = w.bytes();
            } else if (f == 2 && t == 2) {
                entry_name = w.bytes();
            } else if (f == 3 && t == 2) {
                raws.push_back(read_computation(w.sub()));
            } else if (f == 6 && t == 0) {
                entry_id = w.int64();
            } else if (f == 7 && t == 2) {
                read_schedule(w.sub(), schedule);
            } else if (f == 8 && t == 2) {
                read_aliases(w.sub());
            } else if (f == 15 && t == 2) {
                read_device_assignment(w.sub());
            } else {
                w.skip(t);
            }
        }
        m_.is_scheduled = !schedule.empty();
        std::unordered_map<std::int64_t, int> computation_index;
        for (std::size_t i = 0; i < raws.size(); ++i) computation_index[raws[i].id] = static_cast<int>(i);
        for (std::size_t ci = 0; ci < raws.size(); ++ci) {
            RawComputation& raw = raws[ci];
            // Scheduled: the schedule's order (ids of this computation); else the proto's order.
            std::unordered_map<std::int64_t, std::size_t> by_id;
            for (std::size_t i = 0; i < raw.instructions.size(); ++i) by_id[raw.instructions[i].id] = i;
            std::vector<std::size_t> order;
            auto it = schedule.find(raw.id);
            if (it != schedule.end() && it->second.size() == raw.instructions.size()) {
                for (std::int64_t id : it->second) {
                    auto found = by_id.find(id);
                    if (found == by_id.end())
                        error(raw.computation.name, "",
                              "the schedule names an instruction the computation does not have");
                    order.push_back(found->second);
                }
            } else {
                for (std::size_t i = 0; i < raw.instructions.size(); ++i) order.push_back(i);
            }
            std::unordered_map<std::int64_t, int> position;
            for (std::size_t k = 0; k < order.size(); ++k)
                position[raw.instructions[order[k]].id] = static_cast<int>(k);
            Computation& c = raw.computation;
            for (std::size_t k = 0; k < order.size(); ++k) {
                RawInstruction& ri = raw.instructions[order[k]];
                for (std::int64_t id : ri.operand_ids) {
                    auto p = position.find(id);
                    if (p == position.end())
                        error(c.name, ri.inst.name,
                              fmt::format("operand id {} is not in the computation", id));
                    ri.inst.operands.push_back(p->second);
                }
                std::vector<int> called;
                for (std::int64_t id : ri.called_ids) {
                    auto p = computation_index.find(id);
                    if (p == computation_index.end())
                        error(c.name, ri.inst.name,
                              fmt::format("called computation id {} is not in the module", id));
                    called.push_back(p->second);
                }
                if (ri.inst.opcode == Opcode::while_) {
                    // HloInstruction::CreateWhile appends the body, then the condition.
                    if (called.size() == 2) {
                        ri.inst.body = called[0];
                        ri.inst.condition = called[1];
                    }
                } else {
                    ri.inst.called = std::move(called);
                }
                if (ri.id == raw.root_id) c.root = static_cast<int>(k);
                c.instructions.push_back(std::move(ri.inst));
            }
            if (raw.id == entry_id || (entry_id < 0 && c.name == entry_name)) m_.entry = static_cast<int>(ci);
            m_.computations.push_back(std::move(c));
        }
        if (m_.entry < 0 && !m_.computations.empty()) m_.entry = static_cast<int>(m_.computations.size()) - 1;
    }

  private:
    [[noreturn]] void error(const std::string& computation, const std::string& instruction,
                            std::string message) {
        core::Diagnostics d;
        d.error({path_, 0, 0}, instruction.empty() ? computation : computation + "/" + instruction,
                std::move(message));
        throw core::UserError(d);
    }

    void read_schedule(Wire w, std::map<std::int64_t, std::vector<std::int64_t>>& schedule) {
        while (!w.done()) {
            auto [f, t] = w.key();
            if (f != 1 || t != 2) {
                w.skip(t);
                continue;
            }
            Wire entry = w.sub();  // map entry: key 1, value 2 (InstructionSequence: instruction_ids 1)
            std::int64_t key = 0;
            std::vector<std::int64_t> ids;
            while (!entry.done()) {
                auto [ef, et] = entry.key();
                if (ef == 1 && et == 0) {
                    key = entry.int64();
                } else if (ef == 2 && et == 2) {
                    Wire seq = entry.sub();
                    while (!seq.done()) {
                        auto [sf, st] = seq.key();
                        if (sf == 1) {
                            seq.append_integers(st, ids);
                        } else {
                            seq.skip(st);
                        }
                    }
                } else {
                    entry.skip(et);
                }
            }
            schedule[key] = std::move(ids);
        }
    }

    void read_aliases(Wire w) {
        while (!w.done()) {
            auto [f, t] = w.key();
            if (f != 1 || t != 2) {
                w.skip(t);
                continue;
            }
            Wire e = w.sub();
            InputOutputAlias alias;
            while (!e.done()) {
                auto [ef, et] = e.key();
                if (ef == 1) {
                    e.append_integers(et, alias.output_index);
                } else if (ef == 2 && et == 0) {
                    alias.parameter = e.int64();
                } else if (ef == 3) {
                    e.append_integers(et, alias.parameter_index);
                } else {
                    e.skip(et);
                }
            }
            m_.input_output_alias.push_back(std::move(alias));
        }
    }

    void read_device_assignment(Wire w) {
        // replica_count 1, computation_count 2
        while (!w.done()) {
            auto [f, t] = w.key();
            if ((f == 1 || f == 2) && t == 0) {
                const std::int64_t n = w.int64();
                if (n >= 1 && n <= (1 << 20)) (f == 1 ? m_.replica_count : m_.num_partitions) = n;
            } else {
                w.skip(t);
            }
        }
    }

    const std::string& path_;
    Module& m_;
};

// HloModuleProto and HloProto both open with a length-delimited field 1: the module's name (text)
// in one, the module itself (a message, whose first byte is a field key) in the other.
bool is_module_proto(const std::string& path, const std::string& bytes) {
    Wire top(path, bytes, 0, bytes.size());
    while (!top.done()) {
        auto [f, t] = top.key();
        if (f == 1 && t == 2) {
            const std::string_view first = top.view();
            return std::all_of(first.begin(), first.end(),
                               [](char c) { return static_cast<unsigned char>(c) >= 0x20 && c != 0x7f; });
        }
        top.skip(t);
    }
    return false;
}

}  // namespace

Module read_proto(const std::string& path, const std::string& bytes) {
    Module m;
    m.path = path;
    m.format = "proto";
    ModuleBuilder builder(path, m);
    if (is_module_proto(path, bytes)) {
        builder.read_module(Wire(path, bytes, 0, bytes.size()));
    } else {
        Wire top(path, bytes, 0, bytes.size());
        bool has_module = false;
        while (!top.done()) {
            auto [f, t] = top.key();
            if (f == 1 && t == 2) {
                builder.read_module(top.sub());
                has_module = true;
            } else if (f == 3 && t == 2) {
                m.buffer_assignment = read_buffer_assignment(top.sub());
            } else {
                top.skip(t);
            }
        }
        if (!has_module) core::wire_error(path, 0, "an HloProto without a module (field hlo_module)");
    }
    core::Diagnostics d;
    check_module(m, d);
    core::throw_if_errors(d);
    return m;
}

}  // namespace podsim::hlo
