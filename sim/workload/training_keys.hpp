#pragma once

#include <array>
#include <string_view>

#include "core/dtype.hpp"
#include "core/key.hpp"

namespace podsim::workload {

// Name tables, in the order of their enums (training_spec.hpp).
inline constexpr std::array<std::string_view, 4> kOptimizerNames = {"adam", "adamw", "adafactor", "sgd"};
// Remat: podsim's four, then MaxText's remat_policy names verbatim.
inline constexpr std::array<std::string_view, 13> kRematNames = {"none",
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
                                                                 "minimal_offloaded",
                                                                 "custom"};
// Where remat_policy custom puts a named activation (MaxText's values for each name's key), in the
// order of Keep (training_spec.hpp).
inline constexpr std::array<std::string_view, 3> kRematPlaceNames = {"remat", "device", "offload"};
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
         "docs/model.md lists (minimal = checkpoint_dots_with_no_batch_dims); custom: each named activation "
         "where its key (training.decoder_layer_input, qkv_proj, context, out_proj, mlpwi, mlpwo) says"},
    {.path = "training.decoder_layer_input",
     .kind = KeyKind::choice,
     .choices = kRematPlaceNames,
     .default_string = "device",
     .help = "(MaxText decoder_layer_input) with remat: custom, the layer's input (the scan carry): device "
             "keeps it in HBM, offload moves it to host memory until its layer's backward (remat keeps it in "
             "HBM: the scan saves it): remat, device or offload",
     .source = "MaxText configs/base.yml (remat_policy custom), layers/decoders.py"},
    {.path = "training.qkv_proj",
     .kind = KeyKind::choice,
     .choices = kRematPlaceNames,
     .default_string = "remat",
     .help = "(MaxText qkv_proj) with remat: custom, the query, key and value projections (MaxText's "
             "query_proj, key_proj, value_proj and qkv_proj): remat, device or offload",
     .source = "MaxText configs/base.yml (remat_policy custom), layers/decoders.py"},
    {.path = "training.context",
     .kind = KeyKind::choice,
     .choices = kRematPlaceNames,
     .default_string = "remat",
     .help = "(MaxText context) with remat: custom, the attention output before the output projection: "
             "remat, device or offload",
     .source = "MaxText configs/base.yml (remat_policy custom), layers/decoders.py"},
    {.path = "training.out_proj",
     .kind = KeyKind::choice,
     .choices = kRematPlaceNames,
     .default_string = "remat",
     .help =
         "(MaxText out_proj) with remat: custom, the attention output projection: remat, device or offload",
     .source = "MaxText configs/base.yml (remat_policy custom), layers/decoders.py"},
    {.path = "training.mlpwi",
     .kind = KeyKind::choice,
     .choices = kRematPlaceNames,
     .default_string = "remat",
     .help = "(MaxText mlpwi) with remat: custom, the MLP input projection(s), the experts' included "
             "(MaxText's mlpwi, mlpwi_0, mlpwi_1): remat, device or offload",
     .source = "MaxText configs/base.yml (remat_policy custom), layers/decoders.py"},
    {.path = "training.mlpwo",
     .kind = KeyKind::choice,
     .choices = kRematPlaceNames,
     .default_string = "remat",
     .help = "(MaxText mlpwo) with remat: custom, the MLP output projection, the experts' included: remat, "
             "device or offload",
     .source = "MaxText configs/base.yml (remat_policy custom), layers/decoders.py"},
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
    {.path = "training.sa_block_q",
     .kind = KeyKind::integer,
     .unit = "tokens",
     .default_value = 512,
     .minimum = 1,
     .maximum = 1048576,
     .help = "(MaxText sa_block_q) query and key/value block of the flash (splash) attention kernel; causal "
             "attention skips the blocks above the diagonal",
     .source = "MaxText configs/base.yml sa_block_q / sa_block_kv"},
    {.path = "training.capacity_factor",
     .kind = KeyKind::number,
     .unit = "factor",
     .default_value = -1,
     .minimum = -1,
     .maximum = 64,
     .help =
         "(MaxText capacity_factor) above 0, MoE experts drop tokens: each takes int(ceil(seq_len x "
         "num_experts_per_tok / num_experts) x this) per sequence, dispatched and combined by one-hot "
         "einsums; "
         "0 or below: dropless. Read only with sparse_matmul: false: podsim models the grouped matmuls as "
         "dropless",
     .source = "MaxText layers/moe.py generate_masks"},
    {.path = "training.sparse_matmul",
     .kind = KeyKind::boolean,
     .default_value = 1,
     .help =
         "(MaxText sparse_matmul) dropless experts as grouped matmuls over the tokens sorted by expert, with "
         "a (ragged) all-to-all over the expert axis; false: the dense einsum path (dropping with "
         "capacity_factor, else every expert on every token)"},
    {.path = "training.megablox",
     .kind = KeyKind::boolean,
     .default_value = 1,
     .help =
         "(MaxText megablox) the grouped matmul is the megablox kernel; false: jax.lax.ragged_dot, priced "
         "alike (tiles of tile_batch_seq rows); read only with sparse_matmul: true, as in MaxText"},
    {.path = "training.tile_batch_seq",
     .kind = KeyKind::integer,
     .unit = "tokens",
     .default_value = 512,
     .minimum = 1,
     .maximum = 65536,
     .help = "(MaxText tile_batch_seq) rows per tile of the grouped matmul: every group that starts inside a "
             "tile "
             "costs that tile once more",
     .source = "MaxText configs/base.yml; jax megablox gmm.py make_group_metadata"},
    {.path = "training.load_balance_loss_weight",
     .kind = KeyKind::number,
     .unit = "factor",
     .default_value = 0.01,
     .minimum = 0,
     .maximum = 1000,
     .help =
         "(MaxText load_balance_loss_weight) above 0, the router adds Switch Transformer's load-balancing "
         "loss (its cost, not its effect on routing, which is assumed even)",
     .source = "MaxText configs/base.yml at the validation cases' commits"},
    {.path = "training.num_pipeline_microbatches",
     .kind = KeyKind::integer,
     .unit = "microbatches",
     .default_note = "the pipeline stages",
     .minimum = 1,
     .maximum = 65536,
     .help =
         "(MaxText num_pipeline_microbatches) microbatches that flow through the pipeline stages per step, "
         "a multiple of the stages; each holds global_batch / this sequences (these pipeline keys are read "
         "only "
         "with a pipeline mesh axis, as in MaxText)"},
    {.path = "training.num_layers_per_pipeline_stage",
     .kind = KeyKind::integer,
     .unit = "layers",
     .default_value = 1,
     .minimum = 1,
     .maximum = 1024,
     .help = "(MaxText num_layers_per_pipeline_stage) consecutive layers a stage runs per repeat; repeats = "
             "layers / (stages x this): 1 repeat is GPipe, more the circular schedule"},
    {.path = "training.pipeline_fsdp_ag_per_repeat",
     .kind = KeyKind::boolean,
     .help =
         "(MaxText pipeline_fsdp_ag_per_repeat) gather a stage's FSDP-sharded weights once per repeat and "
         "pass instead of once per microbatch"},
    {.path = "training.pipeline_fsdp_ag_once",
     .kind = KeyKind::boolean,
     .help = "(MaxText pipeline_fsdp_ag_once) gather a stage's FSDP-sharded weights once, before the first "
             "microbatch, and keep them for the whole step"},
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
