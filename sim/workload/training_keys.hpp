#pragma once

#include <array>
#include <string_view>

#include "core/dtype.hpp"
#include "core/key.hpp"

namespace podsim::workload {

// Name tables, in the order of their enums (training_spec.hpp).
inline constexpr std::array<std::string_view, 4> kOptimizerNames = {"adam", "adamw", "adafactor", "sgd"};
// Remat: podsim's four, then MaxText's remat_policy names verbatim.
inline constexpr std::array<std::string_view, 12> kRematNames = {"none",
                                                                 "full",
                                                                 "save_dots",
                                                                 "attention",
                                                                 "minimal",
                                                                 "save_dot_except_mlpwi",
                                                                 "save_dot_except_mlp",
                                                                 "save_qkv_proj",
                                                                 "save_dot_with_context_except_mlp",
                                                                 "minimal_flash",
                                                                 "qkv_proj_offloaded",
                                                                 "minimal_offloaded"};
// MaxText's `attention` values; mha is its older name for dot_product (Attention has two values).
inline constexpr std::array<std::string_view, 3> kAttentionChoices = {"dot_product", "mha", "flash"};
inline constexpr std::array<std::string_view, 2> kLossLabelNames = {"ids", "one_hot"};

// Every key of a run config's `training:` block (`podsim explain run`). Adding a key: one line
// here (its default, bounds and help live nowhere else), then read it in config/run.cpp with
// MapReader's Key overloads and give the TrainingSpec member its default from training_key("...").
// Bounds: 2^20 tokens is the longest context trained so far (1M-token long-context training), 2^24
// sequences 256x the largest published global batches (ViT-G: 65,536 images).
using core::KeyKind;
inline constexpr core::Key kTrainingKeys[] = {
    {.path = "training.global_batch",
     .kind = KeyKind::integer,
     .unit = "sequences",
     .default_note = "(required unless per_chip_batch)",
     .minimum = 1,
     .maximum = 16777216,
     .help = "sequences or images per optimizer step"},
    {.path = "training.per_chip_batch",
     .kind = KeyKind::integer,
     .unit = "sequences",
     .default_note = "unset",
     .minimum = 1,
     .maximum = 1048576,
     .help = "sets global_batch = per_chip_batch x chips"},
    {.path = "training.seq_len",
     .kind = KeyKind::integer,
     .unit = "tokens",
     .default_note = "(required for text models)",
     .minimum = 1,
     .maximum = 1048576,
     .help = "tokens per sequence"},
    {.path = "training.microbatches",
     .kind = KeyKind::integer,
     .unit = "microbatches",
     .default_value = 1,
     .minimum = 1,
     .maximum = 65536,
     .help = "gradient accumulation steps per optimizer step"},
    {.path = "training.dtype",
     .kind = KeyKind::choice,
     .choices = core::kDTypeNames,
     .default_string = "bf16",
     .help = "compute (activation) dtype"},
    {.path = "training.param_dtype",
     .kind = KeyKind::choice,
     .choices = core::kDTypeNames,
     .default_string = "fp32",
     .help = "master weights, gradients and optimizer state"},
    {.path = "training.optimizer",
     .kind = KeyKind::choice,
     .choices = kOptimizerNames,
     .default_string = "adam",
     .help = "optimizer (memory and update cost)"},
    {.path = "training.remat",
     .kind = KeyKind::choice,
     .choices = kRematNames,
     .default_string = "none",
     .help =
         "rematerialisation policy; MaxText remat_policy names are accepted verbatim, each the JAX policy "
         "docs/model.md lists (minimal = checkpoint_dots_with_no_batch_dims)"},
    {.path = "training.attention",
     .kind = KeyKind::choice,
     .choices = kAttentionChoices,
     .default_string = "dot_product",
     .help =
         "attention kernel (MaxText `attention`): dot_product (alias mha) writes the S x S scores to HBM; "
         "flash (splash attention on TPU, FlashAttention-2 on GPU) keeps them on chip and skips causal "
         "blocks"},
    {.path = "training.master_dtype",
     .kind = KeyKind::choice,
     .choices = core::kDTypeNames,
     .default_note = "(none)",
     .help = "master copy of the parameters kept by the optimizer (e.g. fp32 with param_dtype bf16)"},
    {.path = "training.tensor_sequence",
     .kind = KeyKind::boolean,
     .help = "sequence parallelism with tensor: all-gather/reduce-scatter instead of all-reduce"},
    {.path = "training.loss_labels",
     .kind = KeyKind::choice,
     .choices = kLossLabelNames,
     .default_string = "ids",
     .help = "the cross-entropy's labels: integer ids (optax softmax_cross_entropy_with_integer_labels: the "
             "gradient goes through a scatter into fp32 logits' shape, then the compute dtype) or a dense "
             "one-hot matrix (Praxis: kept for the backward, the gradient written in the compute dtype)"},
    {.path = "training.scan_layers",
     .kind = KeyKind::boolean,
     .default_note = "runtime.framework jax: true (MaxText scan_layers), pytorch-xla*: false",
     .help = "the layers run as one scanned loop (jax.lax.scan): residuals kept as JAX's autodiff keeps them "
             "and gradients allocated when the loop's backward starts; unrolled, XLA's fusion recomputes "
             "cheap residuals and each layer's gradients come with its backward"},
};

consteval const core::Key& training_key(std::string_view path) {
    return core::find_key(kTrainingKeys, path);
}

}  // namespace podsim::workload
