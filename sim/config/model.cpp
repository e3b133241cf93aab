#include "config/load.hpp"

#include <utility>

#include <fmt/format.h>

#include "config/parse.hpp"
#include "config/schema.hpp"
#include "config/yaml_reader.hpp"

namespace podsim::config {

namespace fs = std::filesystem;
using core::Diagnostics;
using core::Dimension;
using detail::MapReader;
using workload::model_key;

workload::ModelSpec parse_model(const YAML::Node& node, const std::string& file, const std::string& path,
                                Diagnostics& d) {
    using workload::ModelFamily;
    workload::ModelSpec m;
    MapReader r(node, file, path, d, keys_under(model_schema(), ""));
    if (!r.ok()) return m;
    check_schema(r, "podsim.model/v1");
    m.name = r.string(model_key("name")).value_or("");
    if (auto family = r.choice(model_key("family"))) m.family = static_cast<ModelFamily>(*family);
    // Bounds keep every size below 2^31 (model_keys.hpp), so the int members hold them.
    auto get = [&](const core::Key& key, std::optional<bool> required = {}) {
        return static_cast<int>(r.integer(key, required).value_or(0));
    };
    m.layers = get(model_key("layers"));
    m.d_model = get(model_key("d_model"));
    m.heads = get(model_key("heads"));
    m.head_dim = get(model_key("head_dim"));
    m.kv_heads = get(model_key("kv_heads"));
    m.d_ff = get(model_key("d_ff"));
    if (auto a = r.choice(model_key("activation"))) m.activation = static_cast<workload::Activation>(*a);
    m.tied_embeddings = r.boolean(model_key("tied_embeddings")).value_or(m.tied_embeddings);
    m.bias = r.boolean(model_key("bias")).value_or(m.bias);
    m.parallel_block = r.boolean(model_key("parallel_block")).value_or(m.parallel_block);
    if (auto e = r.choice(model_key("embedding_lookup")))
        m.embedding_lookup = static_cast<workload::EmbeddingLookup>(*e);
    // Hugging Face's defaults: GPT2Config.attn_pdrop and BertConfig.attention_probs_dropout_prob 0.1.
    const bool dropout_default = m.family == ModelFamily::gpt2 || m.family == ModelFamily::encoder;
    m.attention_dropout = r.number(model_key("attention_dropout")).value_or(dropout_default ? 0.1 : 0.0);
    m.position = m.family == ModelFamily::decoder ? workload::PositionEmbedding::rope
                                                  : workload::PositionEmbedding::learned;
    if (auto p = r.choice(model_key("position"))) m.position = static_cast<workload::PositionEmbedding>(*p);
    const bool vit = m.family == ModelFamily::vit;
    if (vit) {
        m.image_size = get(model_key("image_size"), true);
        m.patch_size = get(model_key("patch_size"), true);
        m.channels = get(model_key("channels"));
        m.num_classes = get(model_key("num_classes"), true);
        if (m.image_size > 0 && m.patch_size > 0 && m.image_size % m.patch_size != 0) {
            r.error("patch_size", fmt::format("patch_size ({}) does not divide image_size ({})", m.patch_size,
                                              m.image_size));
        }
    } else {
        for (const char* name : {"image_size", "patch_size", "channels", "num_classes"}) {
            if (r.has(name))
                r.error(name, fmt::format("only ViT models take {} (family is {})", name,
                                          workload::family_name(m.family)));
        }
        m.vocab = r.integer(model_key("vocab"), true).value_or(0);
        bool learned = m.position == workload::PositionEmbedding::learned;
        m.max_positions = get(model_key("max_positions"), learned);
    }
    if (m.heads > 0 && m.d_model > 0) {
        if (m.head_dim == 0) {
            if (m.d_model % m.heads != 0) {
                r.error("heads",
                        fmt::format("heads ({}) does not divide d_model ({}); give head_dim explicitly",
                                    m.heads, m.d_model));
            } else {
                m.head_dim = m.d_model / m.heads;
            }
        }
        if (m.kv_heads == 0) m.kv_heads = m.heads;
        if (m.heads % m.kv_heads != 0) {
            r.error("kv_heads", fmt::format("kv_heads ({}) must divide heads ({})", m.kv_heads, m.heads));
        }
        if (m.d_ff == 0) m.d_ff = 4 * m.d_model;  // below 2^31: d_model <= 2^17
    }
    // A wrong num_experts is reported alone: the checks against it would only echo its default.
    const std::size_t errors_before_experts = d.size();
    m.experts = get(model_key("num_experts"));
    const bool experts_ok = d.size() == errors_before_experts;
    if (m.experts == 0) m.experts = static_cast<int>(model_key("num_experts").integer_default());
    m.experts_per_token = get(model_key("num_experts_per_tok"));
    if (m.experts_per_token == 0)
        m.experts_per_token = static_cast<int>(model_key("num_experts_per_tok").integer_default());
    m.moe_d_ff = get(model_key("base_moe_mlp_dim"));
    if (m.moe_d_ff == 0) m.moe_d_ff = m.d_ff;
    m.shared_experts = static_cast<int>(r.integer(model_key("shared_experts")).value_or(m.shared_experts));
    m.moe_layer_step = get(model_key("interleave_moe_layer_step"));
    if (m.moe_layer_step == 0)
        m.moe_layer_step = static_cast<int>(model_key("interleave_moe_layer_step").integer_default());
    if (!experts_ok) return m;
    if (m.is_moe() && m.experts_per_token > m.experts) {  // a dense model's: said below
        r.error("num_experts_per_tok", fmt::format("num_experts_per_tok ({}) exceeds num_experts ({})",
                                                   m.experts_per_token, m.experts));
    }
    if (m.is_moe() && m.layers > 0 && m.moe_layer_step > m.layers) {
        r.error("interleave_moe_layer_step",
                fmt::format("{} exceeds layers ({}): no layer would be an MoE layer (layer l is one where "
                            "l + 1 is a multiple of it); give at most {}, or num_experts 1 for a dense model",
                            m.moe_layer_step, m.layers, m.layers));
    }
    if (!m.is_moe()) {
        // Given at their defaults they say nothing (MaxText's base.yml gives them all).
        const std::pair<const char*, bool> moe_only[] = {
            {"num_experts_per_tok",
             m.experts_per_token != model_key("num_experts_per_tok").integer_default()},
            {"base_moe_mlp_dim", r.has("base_moe_mlp_dim") && m.moe_d_ff != m.d_ff},
            {"shared_experts", m.shared_experts != model_key("shared_experts").integer_default()},
            {"interleave_moe_layer_step",
             m.moe_layer_step != model_key("interleave_moe_layer_step").integer_default()}};
        for (const auto& [name, given] : moe_only) {
            if (given)
                r.error(
                    name,
                    fmt::format("{} applies to mixture-of-experts models only (num_experts above 1)", name));
        }
    }
    return m;
}

workload::ModelSpec load_model_file(const std::string& path) {
    Diagnostics d;
    YAML::Node root = detail::load_yaml_file(path, d);
    workload::ModelSpec m;
    if (d.empty()) m = parse_model(root, path, "", d);
    core::throw_if_errors(d);
    return m;
}

}  // namespace podsim::config
