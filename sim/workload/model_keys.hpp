#pragma once

#include <array>
#include <string_view>

#include "core/key.hpp"

namespace podsim::workload {

// Name tables, in the order of their enums (model_spec.hpp).
inline constexpr std::array<std::string_view, 4> kFamilyNames = {"gpt2", "decoder", "encoder", "vit"};
inline constexpr std::array<std::string_view, 4> kActivationNames = {"gelu", "relu", "swiglu", "geglu"};
inline constexpr std::array<std::string_view, 4> kPositionNames = {"learned", "rope", "relative", "none"};
inline constexpr std::array<std::string_view, 2> kEmbeddingLookupNames = {"gather", "one_hot"};

// Every key of podsim.model/v1 (`podsim explain model`). Adding a key: one line here (its default,
// bounds and help live nowhere else), then read it in config/model.cpp with MapReader's Key
// overloads and give the ModelSpec member its default from model_key("...").
// Upper bounds are about 8x the largest published dense transformers (PaLM 540B: 118 layers,
// d_model 18432, d_ff 73728; Llama 3.1 405B: 126 layers, 128 heads; vocabularies up to 256k):
// they keep every product of sizes inside 64-bit integers and the op graph in memory.
using core::KeyKind;
inline constexpr core::Key kModelKeys[] = {
    {.path = "schema", .required = true, .help = "must be podsim.model/v1"},
    {.path = "name", .required = true, .help = "model name"},
    {.path = "source", .help = "where the architecture comes from"},
    {.path = "notes", .help = "free text"},
    {.path = "family",
     .kind = KeyKind::choice,
     .choices = kFamilyNames,
     .required = true,
     .help =
         "gpt2: learned positions, LayerNorm, GELU; decoder: causal LM (gated MLPs, GQA, parallel blocks); "
         "encoder: bidirectional; vit: patches, class token, classifier"},
    {.path = "layers",
     .kind = KeyKind::integer,
     .unit = "blocks",
     .required = true,
     .minimum = 1,
     .maximum = 1024,
     .help = "transformer blocks"},
    {.path = "d_model",
     .kind = KeyKind::integer,
     .unit = "elements",
     .required = true,
     .minimum = 1,
     .maximum = 131072,
     .help = "hidden size"},
    {.path = "heads",
     .kind = KeyKind::integer,
     .unit = "heads",
     .required = true,
     .minimum = 1,
     .maximum = 4096,
     .help = "attention (query) heads"},
    {.path = "head_dim",
     .kind = KeyKind::integer,
     .unit = "elements",
     .default_note = "d_model / heads",
     .minimum = 1,
     .maximum = 16384,
     .help = "size of one head"},
    {.path = "kv_heads",
     .kind = KeyKind::integer,
     .unit = "heads",
     .default_note = "heads",
     .minimum = 1,
     .maximum = 4096,
     .help = "key/value heads: 1 = multi-query, between 1 and heads = grouped-query"},
    {.path = "d_ff",
     .kind = KeyKind::integer,
     .unit = "elements",
     .default_note = "4 x d_model",
     .minimum = 1,
     .maximum = 1048576,
     .help = "MLP width"},
    {.path = "activation",
     .kind = KeyKind::choice,
     .choices = kActivationNames,
     .default_string = "gelu",
     .help = "MLP activation; gated ones have three matrices"},
    {.path = "vocab",
     .kind = KeyKind::integer,
     .unit = "tokens",
     .default_note = "(required for text)",
     .minimum = 1,
     .maximum = 16777216,
     .help = "vocabulary size"},
    {.path = "max_positions",
     .kind = KeyKind::integer,
     .unit = "tokens",
     .default_note = "(required with learned positions)",
     .minimum = 1,
     .maximum = 16777216,
     .help = "positions of the learned table"},
    {.path = "tied_embeddings",
     .kind = KeyKind::boolean,
     .default_value = 1,
     .help = "LM head shares the token embedding"},
    {.path = "bias",
     .kind = KeyKind::boolean,
     .default_value = 1,
     .help = "biases in projections (and LayerNorm shift)"},
    {.path = "parallel_block", .kind = KeyKind::boolean, .help = "attention and MLP side by side (PaLM)"},
    {.path = "embedding_lookup",
     .kind = KeyKind::choice,
     .choices = kEmbeddingLookupNames,
     .default_string = "gather",
     .help = "how token (and learned position) embeddings are looked up: gather rows, or multiply a one-hot "
             "matrix of the ids by the table (Praxis lookup_style 'matmul'), a matmul whose backward keeps "
             "the one-hot matrix"},
    {.path = "attention_dropout",
     .kind = KeyKind::number,
     .default_note = "gpt2 and encoder: 0.1, decoder and vit: 0",
     .minimum = 0,
     .maximum = 1,
     .help =
         "dropout probability on the attention weights in training (Hugging Face GPT2Config.attn_pdrop and "
         "BertConfig.attention_probs_dropout_prob default to 0.1; LlamaConfig.attention_dropout and "
         "ViTConfig.attention_probs_dropout_prob to 0; MaxText dropout_rate 0)"},
    {.path = "position",
     .kind = KeyKind::choice,
     .choices = kPositionNames,
     .default_note = "gpt2/encoder/vit: learned, decoder: rope",
     .help = "position encoding"},
    {.path = "image_size",
     .kind = KeyKind::integer,
     .unit = "pixels",
     .default_note = "(required for vit)",
     .minimum = 1,
     .maximum = 16384,
     .help = "image side in pixels"},
    {.path = "patch_size",
     .kind = KeyKind::integer,
     .unit = "pixels",
     .default_note = "(required for vit)",
     .minimum = 1,
     .maximum = 16384,
     .help = "patch side in pixels"},
    {.path = "channels",
     .kind = KeyKind::integer,
     .unit = "channels",
     .default_value = 3,
     .minimum = 1,
     .maximum = 1024,
     .help = "(vit) input channels"},
    {.path = "num_classes",
     .kind = KeyKind::integer,
     .unit = "classes",
     .default_note = "(required for vit)",
     .minimum = 1,
     .maximum = 16777216,
     .help = "classifier outputs"},
};

consteval const core::Key& model_key(std::string_view path) {
    return core::find_key(kModelKeys, path);
}

}  // namespace podsim::workload
