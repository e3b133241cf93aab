#pragma once

#include <cstdint>
#include <string>

#include "workload/model_keys.hpp"

namespace podsim::workload {

enum class ModelFamily { gpt2, decoder, encoder, vit };
enum class Activation { gelu, relu, swiglu, geglu };
enum class PositionEmbedding { learned, rope, relative, none };
enum class EmbeddingLookup { gather, one_hot };
static_assert(kFamilyNames.size() == static_cast<std::size_t>(ModelFamily::vit) + 1);
static_assert(kActivationNames.size() == static_cast<std::size_t>(Activation::geglu) + 1);
static_assert(kPositionNames.size() == static_cast<std::size_t>(PositionEmbedding::none) + 1);

// A transformer architecture (schema podsim.model/v1). Sizes are elements, not bytes. Required
// keys start at 0 (unset); the others take their declared defaults (model_keys.hpp).
struct ModelSpec {
    std::string name;
    ModelFamily family = ModelFamily::gpt2;
    int layers = 0;
    int d_model = 0;
    int heads = 0;
    int head_dim = 0;  // d_model / heads unless given
    int kv_heads = 0;  // heads unless given: 1 = multi-query, in between = grouped-query
    int d_ff = 0;      // 4 * d_model unless given
    Activation activation = model_key("activation").choice_default<Activation>();
    std::int64_t vocab = 0;
    int max_positions = 0;
    bool tied_embeddings = model_key("tied_embeddings").boolean_default();
    bool bias = model_key("bias").boolean_default();
    bool parallel_block =
        model_key("parallel_block").boolean_default();  // attention and MLP side by side on one norm (PaLM)
    PositionEmbedding position = PositionEmbedding::learned;
    EmbeddingLookup embedding_lookup = model_key("embedding_lookup").choice_default<EmbeddingLookup>();
    double attention_dropout = 0.0;  // probability, on the attention weights in training
    // vit only
    int image_size = 0;
    int patch_size = 0;
    int channels = static_cast<int>(model_key("channels").integer_default());
    int num_classes = 0;
    // Mixture of experts (MaxText's names in model_keys.hpp): experts per MoE layer (1: none), the
    // top-k each token is routed to, each expert's MLP width (0 until loaded: d_ff), experts every
    // token also goes through, and which layers are MoE layers.
    int experts = static_cast<int>(model_key("num_experts").integer_default());
    int experts_per_token = static_cast<int>(model_key("num_experts_per_tok").integer_default());
    int moe_d_ff = 0;
    int shared_experts = static_cast<int>(model_key("shared_experts").integer_default());
    int moe_layer_step = static_cast<int>(model_key("interleave_moe_layer_step").integer_default());

    bool operator==(const ModelSpec&) const = default;
    bool is_moe() const { return experts > 1; }
    // MaxText layers/llama4.py determine_is_moe_layer: (layer + 1) % interleave_moe_layer_step == 0.
    bool is_moe_layer(int layer) const { return is_moe() && (layer + 1) % moe_layer_step == 0; }
    int moe_layers() const { return is_moe() ? layers / moe_layer_step : 0; }
    // Tokens an expert takes from a sequence of `tokens` when it drops the rest (MaxText layers/moe.py
    // generate_masks): int(max(tokens_per_expert x capacity_factor, capacity_factor)), with
    // tokens_per_expert = ceil(tokens x k / E).
    double tokens_per_expert(std::int64_t tokens) const;
    std::int64_t expert_capacity(std::int64_t tokens, double capacity_factor) const;
    bool gated() const { return activation == Activation::swiglu || activation == Activation::geglu; }
    bool is_vit() const { return family == ModelFamily::vit; }
    bool causal() const { return family == ModelFamily::gpt2 || family == ModelFamily::decoder; }
    int patches() const { return is_vit() ? (image_size / patch_size) * (image_size / patch_size) : 0; }
    // Tokens per sample: seq_len for text, patches + class token for ViT.
    int tokens_per_sample(int seq_len) const { return is_vit() ? patches() + 1 : seq_len; }
    std::int64_t attention_width() const { return static_cast<std::int64_t>(heads) * head_dim; }
    std::int64_t kv_width() const { return static_cast<std::int64_t>(kv_heads) * head_dim; }
    // Grouped-query attention: more than one key/value head, fewer than the query heads.
    bool grouped_query() const { return kv_heads > 1 && kv_heads < heads; }
};

std::string_view family_name(ModelFamily family);
std::string_view activation_name(Activation activation);
std::string_view position_name(PositionEmbedding position);

// Trainable parameters, counted as Hugging Face's num_parameters() counts them (tied tables once).
struct ParamCount {
    std::int64_t embedding = 0;  // token/patch embedding, positions, class token
    std::int64_t per_layer = 0;  // a dense layer
    std::int64_t head = 0;       // final norm, untied LM head or classifier
    std::int64_t total = 0;
    // An MoE layer: all of it, and its routed experts' part (split over the expert axis).
    std::int64_t per_moe_layer = 0;
    std::int64_t routed_experts_per_moe_layer = 0;
    // Parameters each token goes through: the routed experts but num_experts_per_tok of each MoE
    // layer's left out (MaxText's MFU convention, maxtext_utils.calculate_tflops_training_per_device);
    // `total` for a dense model.
    std::int64_t active = 0;
};
ParamCount count_params(const ModelSpec& model);

}  // namespace podsim::workload
