#include "hlo/op_work.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/diagnostics.hpp"

namespace podsim::hlo {
namespace {

const Shape& operand_shape(const Computation& c, const Instruction& inst, std::size_t i) {
    return c.instructions[static_cast<std::size_t>(inst.operands[i])].shape;
}

double product(const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& which) {
    double p = 1.0;
    for (std::int64_t d : which) {
        if (d >= 0 && d < static_cast<std::int64_t>(dims.size()))
            p *= static_cast<double>(dims[static_cast<std::size_t>(d)]);
    }
    return p;
}

double product_except(const std::vector<std::int64_t>& dims, const std::vector<std::int64_t>& a,
                      const std::vector<std::int64_t>& b) {
    double p = 1.0;
    for (std::size_t d = 0; d < dims.size(); ++d) {
        const auto i = static_cast<std::int64_t>(d);
        if (std::find(a.begin(), a.end(), i) == a.end() && std::find(b.begin(), b.end(), i) == b.end())
            p *= static_cast<double>(dims[d]);
    }
    return p;
}

struct Matmul {
    double batch = 1.0, m = 0.0, n = 0.0, k = 0.0;
    double flops() const { return 2.0 * batch * m * n * k; }
};

Matmul dot_matmul(const Shape& lhs, const Shape& rhs, const DotDimensions& dims) {
    Matmul mm;
    mm.batch = product(lhs.dims, dims.lhs_batch);
    mm.k = product(lhs.dims, dims.lhs_contracting);
    mm.m = product_except(lhs.dims, dims.lhs_batch, dims.lhs_contracting);
    mm.n = product_except(rhs.dims, dims.rhs_batch, dims.rhs_contracting);
    return mm;
}

Matmul convolution_matmul(const Shape& output, const Shape& kernel, std::int64_t output_feature_dim) {
    Matmul mm;
    if (kernel.dims.empty()) return mm;
    if (output_feature_dim < 0 || output_feature_dim >= static_cast<std::int64_t>(kernel.dims.size()))
        output_feature_dim = static_cast<std::int64_t>(kernel.dims.size()) - 1;
    const double features = static_cast<double>(
        std::max<std::int64_t>(1, kernel.dims[static_cast<std::size_t>(output_feature_dim)]));
    mm.n = features;
    mm.m = output.elements() / features;
    mm.k = kernel.elements() / features;
    return mm;
}

double leaves_bytes(const Shape& s) {
    return s.bytes();
}

// Output bytes a library call writes: its results without the trailing workspace/scratch buffers
// (u8 or s8 vectors of cuBLAS, cuDNN and Transformer Engine calls).
double result_bytes(const Shape& shape) {
    if (!shape.is_tuple()) return shape.bytes();
    double sum = 0.0;
    for (const Shape& s : shape.tuple) {
        const bool scratch = (s.type == ElementType::u8 || s.type == ElementType::s8) && s.dims.size() == 1;
        if (!scratch) sum += s.bytes();
    }
    return sum;
}

double operands_bytes(const Computation& c, const Instruction& inst) {
    double sum = 0.0;
    for (std::size_t i = 0; i < inst.operands.size(); ++i) sum += leaves_bytes(operand_shape(c, inst, i));
    return sum;
}

// "16" or 16 in JSON; nullopt for anything else.
std::optional<double> json_number(const nlohmann::json& j) {
    if (j.is_number()) return j.get<double>();
    if (j.is_string()) {
        const std::string s = j.get<std::string>();
        double v = 0.0;
        auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec == std::errc() && ptr == s.data() + s.size()) return v;
    }
    return std::nullopt;
}

// A member of a JSON object; null where `j` is null, no object, or lacks it (nlohmann's
// operator[] and value() throw on a member of a number).
const nlohmann::json* member(const nlohmann::json* j, const char* key) {
    if (j == nullptr || !j->is_object()) return nullptr;
    const auto it = j->find(key);
    return it == j->end() ? nullptr : &*it;
}

// A list of whole numbers in [0, limit) ("16" or 16), empty where absent; nullopt for anything
// else (a hostile module's 1e300 would not fit an int64).
std::optional<std::vector<std::int64_t>> json_whole_numbers(const nlohmann::json* j, double limit) {
    std::vector<std::int64_t> out;
    if (j == nullptr) return out;
    if (!j->is_array()) return std::nullopt;
    for (const auto& item : *j) {
        const auto v = json_number(item);
        if (!v || !(*v >= 0.0 && *v < limit) || *v != std::floor(*v)) return std::nullopt;
        out.push_back(static_cast<std::int64_t>(*v));
    }
    return out;
}

std::optional<nlohmann::json> parse_json(const std::string& text) {
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) return std::nullopt;
    return j;
}

// `key = value : type` entries of an MLIR dictionary attribute ({a = 1 : i64, b = true}), as
// Transformer Engine's FFI calls print their backend_config.
std::map<std::string, std::string> mlir_dictionary(std::string_view text) {
    std::map<std::string, std::string> out;
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() &&
               (text[i] == '{' || text[i] == ',' || std::isspace(static_cast<unsigned char>(text[i]))))
            ++i;
        const std::size_t key_start = i;
        while (i < text.size() && (std::isalnum(static_cast<unsigned char>(text[i])) || text[i] == '_')) ++i;
        const std::string key(text.substr(key_start, i - key_start));
        while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
        if (key.empty() || i >= text.size() || text[i] != '=') {
            while (i < text.size() && text[i] != ',') ++i;
            continue;
        }
        ++i;
        while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
        const std::size_t value_start = i;
        while (i < text.size() && text[i] != ',' && text[i] != ':' && text[i] != '}') ++i;
        std::string value(text.substr(value_start, i - value_start));
        while (!value.empty() && std::isspace(static_cast<unsigned char>(value.back()))) value.pop_back();
        out[key] = value;
        while (i < text.size() && text[i] != ',') ++i;
    }
    return out;
}

double to_number(const std::string& s) {
    double v = 0.0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() ? v : 0.0;
}

struct Attention {
    double batch = 0.0, heads = 0.0, q = 0.0, kv = 0.0, d_qk = 0.0, d_v = 0.0;
    bool causal = false;
    bool backward = false;
    // Forward: S = Q K^T and O = P V. Backward (flash attention recomputes S): S, dP = dO V^T,
    // dV = P^T dO, dQ = dS K, dK = dS^T Q (FlashAttention-2, Dao 2023, Algorithm 2).
    double flops() const {
        const double per_score = backward ? 3.0 * d_qk + 2.0 * d_v : d_qk + d_v;
        const double full = 2.0 * batch * heads * q * kv * per_score;
        return causal ? full / 2.0 : full;  // blocks above the diagonal are skipped
    }
};

OpWork attention_work(const Attention& a) {
    OpWork w;
    w.flops = a.flops();
    // As a matmul of the scores: (batch x heads) of [q x kv] x [kv x d], scaled to its FLOPs.
    w.mm_batch = a.batch * a.heads;
    w.mm_m = a.q;
    w.mm_n = a.kv;
    w.mm_k = std::max(a.d_qk, a.d_v);
    return w;
}

}  // namespace

bool is_annotation_call(const Instruction& inst) {
    if (inst.opcode != Opcode::custom_call) return false;
    static const std::set<std::string, std::less<>> kAnnotations = {"Sharding",
                                                                    "SPMDFullToShardShape",
                                                                    "SPMDShardToFullShape",
                                                                    "LayoutConstraint",
                                                                    "annotate_device_placement",
                                                                    "MoveToHost",
                                                                    "MoveToDevice",
                                                                    "Pin",
                                                                    "Unpin",
                                                                    "xla.sdy.GlobalToLocalShape",
                                                                    "xla.sdy.LocalToGlobalShape",
                                                                    "xla.sdy.FuncResultSharding",
                                                                    "X64Combine"};
    return kAnnotations.count(inst.custom_call_target) > 0;
}

WorkModel::WorkModel(const Module& module) : module_(module) {}

const WorkModel::FusionInfo& WorkModel::fusion(int computation) {
    auto found = fusions_.find(computation);
    if (found != fusions_.end()) return found->second;
    FusionInfo info;
    const Computation& c = module_.computations[static_cast<std::size_t>(computation)];
    const std::size_t n = c.instructions.size();
    std::vector<std::vector<std::pair<int, std::size_t>>> users(n);  // user, operand position
    for (std::size_t i = 0; i < n; ++i) {
        const Instruction& inst = c.instructions[i];
        for (std::size_t k = 0; k < inst.operands.size(); ++k)
            users[static_cast<std::size_t>(inst.operands[k])].emplace_back(static_cast<int>(i), k);
        Matmul mm;
        if (inst.opcode == Opcode::dot && inst.operands.size() >= 2) {
            mm = dot_matmul(operand_shape(c, inst, 0), operand_shape(c, inst, 1), inst.dot);
        } else if (inst.opcode == Opcode::convolution && inst.operands.size() >= 2) {
            mm = convolution_matmul(inst.shape, operand_shape(c, inst, 1), inst.kernel_output_feature_dim);
        } else if (inst.opcode == Opcode::fusion && !inst.called.empty()) {
            const FusionInfo& nested = fusion(inst.called[0]);
            info.flops += nested.flops;
            if (nested.mm_batch * nested.mm_m * nested.mm_n * nested.mm_k >
                info.mm_batch * info.mm_m * info.mm_n * info.mm_k) {
                info.mm_batch = nested.mm_batch, info.mm_m = nested.mm_m, info.mm_n = nested.mm_n,
                info.mm_k = nested.mm_k;
            }
            continue;
        } else {
            continue;
        }
        info.flops += mm.flops();
        if (mm.flops() > 2.0 * info.mm_batch * info.mm_m * info.mm_n * info.mm_k) {
            info.mm_batch = mm.batch, info.mm_m = mm.m, info.mm_n = mm.n, info.mm_k = mm.k;
        }
    }
    // Bytes an instruction's value is read with: through views (bitcasts), a slice reads the slice
    // and an in-place update target is not read; any other use reads it whole.
    auto read_bytes = [&](auto&& self, std::size_t i, double whole) -> double {
        double sum = 0.0;
        for (auto [user, position] : users[i]) {
            const Instruction& u = c.instructions[static_cast<std::size_t>(user)];
            if (position == 0 && (u.opcode == Opcode::dynamic_slice || u.opcode == Opcode::slice ||
                                  u.opcode == Opcode::gather)) {
                sum += u.shape.bytes();
            } else if (position == 0 && u.opcode == Opcode::dynamic_update_slice) {
                // written in place, not read
            } else if (u.opcode == Opcode::bitcast || u.opcode == Opcode::get_tuple_element) {
                sum += self(self, static_cast<std::size_t>(user), whole);
            } else {
                return whole;
            }
            if (sum >= whole) return whole;
        }
        return sum;
    };
    for (int p : c.parameters) {
        const double whole = c.instructions[static_cast<std::size_t>(p)].shape.bytes();
        info.read_bytes.push_back(read_bytes(read_bytes, static_cast<std::size_t>(p), whole));
    }
    // What the root writes, and which of its leaves update an operand in place.
    auto through_views = [&](int i) {
        while (c.instructions[static_cast<std::size_t>(i)].opcode == Opcode::bitcast &&
               !c.instructions[static_cast<std::size_t>(i)].operands.empty())
            i = c.instructions[static_cast<std::size_t>(i)].operands[0];
        return i;
    };
    auto parameter_number = [&](int i) -> std::int64_t {
        const Instruction& inst = c.instructions[static_cast<std::size_t>(through_views(i))];
        return inst.opcode == Opcode::parameter ? inst.parameter_number : -1;
    };
    std::vector<int> root_leaves;
    const Instruction& root = c.instructions[static_cast<std::size_t>(c.root)];
    if (root.opcode == Opcode::tuple) {
        root_leaves = root.operands;
    } else {
        root_leaves = {c.root};
    }
    for (std::size_t leaf = 0; leaf < root_leaves.size(); ++leaf) {
        const Instruction& out = c.instructions[static_cast<std::size_t>(through_views(root_leaves[leaf]))];
        if (out.opcode == Opcode::dynamic_update_slice && out.operands.size() >= 2) {
            info.written_bytes += c.instructions[static_cast<std::size_t>(out.operands[1])].shape.bytes();
            const std::int64_t p = parameter_number(out.operands[0]);
            if (p >= 0) info.in_place.emplace_back(leaf, static_cast<std::size_t>(p));
        } else if (out.opcode == Opcode::scatter && out.operands.size() >= 3) {
            // One operand: (operand, indices, updates); the updates are written, the rest stays.
            info.written_bytes += c.instructions[static_cast<std::size_t>(out.operands.back())].shape.bytes();
            const std::int64_t p = parameter_number(out.operands[0]);
            if (p >= 0) info.in_place.emplace_back(leaf, static_cast<std::size_t>(p));
        } else {
            info.written_bytes += c.instructions[static_cast<std::size_t>(root_leaves[leaf])].shape.bytes();
        }
    }
    return fusions_.emplace(computation, std::move(info)).first->second;
}

OpWork WorkModel::custom_call(const Computation& c, const Instruction& inst) {
    OpWork w;
    const std::string& target = inst.custom_call_target;
    const double bytes = operands_bytes(c, inst) + result_bytes(inst.shape);
    // A backend_config that says something else than XLA writes is a mistake in the module.
    auto config_error = [&](const std::string& what, const nlohmann::json* value,
                            const std::string& expected) {
        core::Diagnostics d;
        d.error({module_.path, inst.line, inst.line > 0 ? 1 : 0}, inst.name,
                fmt::format("backend_config: {} is {}: expected {}", what, value ? value->dump() : "missing",
                            expected));
        throw core::UserError(d);
    };
    // The member `key` of `parent` (path `path` in the config), which must be an object when present.
    auto object_member = [&](const nlohmann::json* parent, const char* key, const std::string& path) {
        const nlohmann::json* value = member(parent, key);
        if (value && !value->is_object()) config_error(path, value, "an object");
        return value;
    };
    if (target.starts_with("__cublas$gemm") || target.starts_with("__cublas$lt$matmul")) {
        auto config = parse_json(inst.backend_config);
        const nlohmann::json* gemm =
            config ? object_member(&*config, "gemm_backend_config", "gemm_backend_config") : nullptr;
        if (gemm && inst.operands.size() >= 2) {
            const nlohmann::json* dims =
                object_member(gemm, "dot_dimension_numbers", "gemm_backend_config.dot_dimension_numbers");
            const Shape& lhs = operand_shape(c, inst, 0);
            const Shape& rhs = operand_shape(c, inst, 1);
            auto dimensions = [&](const char* key, const Shape& operand) {
                const nlohmann::json* list = member(dims, key);
                auto out = json_whole_numbers(list, static_cast<double>(operand.dims.size()));
                if (!out)
                    config_error(fmt::format("gemm_backend_config.dot_dimension_numbers.{}", key), list,
                                 fmt::format("dimensions of an operand of rank {}", operand.dims.size()));
                return *out;
            };
            DotDimensions d;
            d.lhs_batch = dimensions("lhs_batch_dimensions", lhs);
            d.rhs_batch = dimensions("rhs_batch_dimensions", rhs);
            d.lhs_contracting = dimensions("lhs_contracting_dimensions", lhs);
            d.rhs_contracting = dimensions("rhs_contracting_dimensions", rhs);
            const Matmul mm = dot_matmul(lhs, rhs, d);
            w.flops = mm.flops();
            w.mm_batch = mm.batch, w.mm_m = mm.m, w.mm_n = mm.n, w.mm_k = mm.k;
            w.bytes = bytes;
            return w;
        }
    } else if (target.starts_with("__cudnn$fmha")) {
        auto config = parse_json(inst.backend_config);
        const nlohmann::json* fmha =
            config ? object_member(&*config, "cudnn_fmha_backend_config", "cudnn_fmha_backend_config")
                   : nullptr;
        if (fmha && inst.operands.size() >= 3) {
            const nlohmann::json* shape = object_member(
                fmha, "intermediate_tensor_shape", "cudnn_fmha_backend_config.intermediate_tensor_shape");
            const nlohmann::json* list = member(shape, "dimensions");
            const auto scores = json_whole_numbers(list, static_cast<double>(std::int64_t{1} << 40));
            if (!scores)
                config_error("cudnn_fmha_backend_config.intermediate_tensor_shape.dimensions", list,
                             "a list of sizes");
            const nlohmann::json* mask = member(fmha, "mask_type");
            if (mask && !mask->is_string())
                config_error("cudnn_fmha_backend_config.mask_type", mask, "a string");
            if (scores->size() == 4) {
                Attention a;
                a.batch = static_cast<double>((*scores)[0]);
                a.heads = static_cast<double>((*scores)[1]);
                a.q = static_cast<double>((*scores)[2]);
                a.kv = static_cast<double>((*scores)[3]);
                const Shape& q = operand_shape(c, inst, 0);
                const Shape& v = operand_shape(c, inst, 2);
                a.d_qk = q.dims.empty() ? 0.0 : static_cast<double>(q.dims.back());
                a.d_v = v.dims.empty() ? 0.0 : static_cast<double>(v.dims.back());
                a.causal = mask && mask->get<std::string>().find("CAUSAL") != std::string::npos;
                a.backward = target.find("Backward") != std::string::npos;
                w = attention_work(a);
                w.bytes = bytes;
                return w;
            }
        }
    } else if (target.starts_with("te_fused_attn_forward") || target.starts_with("te_fused_attn_backward")) {
        auto d = mlir_dictionary(inst.backend_config);
        Attention a;
        a.batch = to_number(d["input_batch"]);
        a.heads = to_number(d["attn_heads"]);
        a.q = to_number(d["q_max_seqlen"]);
        a.kv = to_number(d["kv_max_seqlen"]);
        a.d_qk = to_number(d["qk_head_dim"]);
        a.d_v = d.count("v_head_dim") ? to_number(d["v_head_dim"]) : a.d_qk;
        // NVTE_Mask_Type: 2 causal, 3 padding + causal, 4 and 5 their bottom-right forms.
        const double mask = to_number(d["mask_type"]);
        a.causal = mask >= 2.0 && mask <= 5.0;
        a.backward = target.find("backward") != std::string::npos;
        if (a.batch > 0 && a.heads > 0 && a.q > 0 && a.kv > 0 && a.d_qk > 0) {
            w = attention_work(a);
            w.bytes = bytes;
            return w;
        }
    } else if (target == "tpu_custom_call") {
        // Pallas kernels may declare {"custom_call_config": {"cost_estimate": {"flops": ..,
        // "bytes_accessed": ..}}} (jax/_src/tpu_custom_call.py, CostEstimate).
        auto config = parse_json(inst.backend_config);
        const nlohmann::json* cost =
            member(config ? member(&*config, "custom_call_config") : nullptr, "cost_estimate");
        if (cost) {
            auto estimate = [&](const char* key) {
                const nlohmann::json* value = member(cost, key);
                if (value == nullptr) return 0.0;
                const auto v = json_number(*value);
                if (!v || !std::isfinite(*v) || *v < 0.0)
                    config_error(fmt::format("custom_call_config.cost_estimate.{}", key), value,
                                 "a finite count from 0");
                return *v;
            };
            w.flops = estimate("flops");
            const double accessed = estimate("bytes_accessed");
            w.bytes = accessed > 0.0 ? accessed : bytes;
            if (w.flops > 0.0) {
                // An unknown shape: a square matmul of the same FLOPs, large enough not to pad.
                w.mm_m = w.mm_n = w.mm_k = std::cbrt(w.flops / 2.0);
            }
            return w;
        }
    }
    ++unknown_targets_[target];
    w.bytes = bytes;
    w.bytes_only = true;
    return w;
}

OpWork WorkModel::work(const Computation& c, const Instruction& inst) {
    OpWork w;
    switch (inst.opcode) {
        case Opcode::dot: {
            if (inst.operands.size() < 2) break;
            const Matmul mm = dot_matmul(operand_shape(c, inst, 0), operand_shape(c, inst, 1), inst.dot);
            w.flops = mm.flops();
            w.mm_batch = mm.batch, w.mm_m = mm.m, w.mm_n = mm.n, w.mm_k = mm.k;
            w.bytes = operands_bytes(c, inst) + inst.shape.bytes();
            return w;
        }
        case Opcode::convolution: {
            if (inst.operands.size() < 2) break;
            const Matmul mm =
                convolution_matmul(inst.shape, operand_shape(c, inst, 1), inst.kernel_output_feature_dim);
            w.flops = mm.flops();
            w.mm_batch = mm.batch, w.mm_m = mm.m, w.mm_n = mm.n, w.mm_k = mm.k;
            w.bytes = operands_bytes(c, inst) + inst.shape.bytes();
            return w;
        }
        case Opcode::fusion: {
            const FusionInfo& f = fusion(inst.called[0]);
            w.flops = f.flops;
            w.mm_batch = f.mm_batch, w.mm_m = f.mm_m, w.mm_n = f.mm_n, w.mm_k = f.mm_k;
            for (std::size_t i = 0; i < inst.operands.size(); ++i) {
                const double whole = operand_shape(c, inst, i).bytes();
                w.bytes += i < f.read_bytes.size() ? std::min(whole, f.read_bytes[i]) : whole;
            }
            w.bytes += f.written_bytes;
            w.in_place = f.in_place;
            for (const auto& alias : inst.output_operand_aliasing) {
                if (alias.output_index.size() <= 1 && alias.operand >= 0)
                    w.in_place.emplace_back(
                        alias.output_index.empty() ? 0 : static_cast<std::size_t>(alias.output_index[0]),
                        static_cast<std::size_t>(alias.operand));
            }
            return w;
        }
        case Opcode::custom_call: {
            w = custom_call(c, inst);
            for (const auto& alias : inst.output_operand_aliasing) {
                if (alias.output_index.size() <= 1 && alias.operand >= 0)
                    w.in_place.emplace_back(
                        alias.output_index.empty() ? 0 : static_cast<std::size_t>(alias.output_index[0]),
                        static_cast<std::size_t>(alias.operand));
            }
            return w;
        }
        case Opcode::dynamic_update_slice:
            if (inst.operands.size() >= 2) {
                w.bytes = 2.0 * operand_shape(c, inst, 1).bytes();  // the update read, then written
                w.in_place.emplace_back(0, 0);
                return w;
            }
            break;
        case Opcode::scatter:
            if (inst.operands.size() >= 3) {
                w.bytes = 2.0 * operand_shape(c, inst, inst.operands.size() - 1).bytes() +
                          operand_shape(c, inst, 1).bytes();
                w.in_place.emplace_back(0, 0);
                return w;
            }
            break;
        case Opcode::dynamic_slice:
        case Opcode::slice:
            w.bytes = 2.0 * inst.shape.bytes();
            return w;
        case Opcode::gather:
            w.bytes = 2.0 * inst.shape.bytes() +
                      (inst.operands.size() >= 2 ? operand_shape(c, inst, 1).bytes() : 0.0);
            return w;
        default:
            break;
    }
    w.bytes = operands_bytes(c, inst) + inst.shape.bytes();
    return w;
}

}  // namespace podsim::hlo
