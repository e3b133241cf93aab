#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/dtype.hpp"
#include "workload/training_keys.hpp"

namespace podsim::workload {

enum class Optimizer { adam, adamw, adafactor, sgd };

// Remat policies. podsim's own four, and MaxText's `remat_policy` values verbatim (MaxText
// layers/decoders.py), each a JAX checkpoint policy over the activation names below.
enum class Remat {
    none,                              // everything saved (no jax.checkpoint)
    full,                              // nothing saveable: only the layer input (the scan carry)
    save_dots,                         // jax.checkpoint_policies.checkpoint_dots
    attention,                         // everything but the attention internals
    minimal,                           // checkpoint_dots_with_no_batch_dims
    save_dot_except_mlpwi,             // save_only_these_names(q, k, v, qkv_proj, out_proj, mlpwo)
    save_dot_except_mlp,               // save_only_these_names(q, k, v, qkv_proj, out_proj)
    save_qkv_proj,                     // save_only_these_names(q, k, v, qkv_proj)
    save_dot_with_context_except_mlp,  // save_only_these_names(q, k, v, qkv_proj, context, out_proj)
    minimal_flash,                     // save_from_both_policies(minimal, save_only_these_names(context))
    qkv_proj_offloaded,                // save_and_offload_only_these_names(offloaded: q, k, v)
    minimal_offloaded,                 // offload_dot_with_no_batch_dims(device -> pinned_host)
    custom,                            // each name where its key says (TrainingSpec::custom_keep)
};

// The names MaxText gives its activations with jax.ad_checkpoint.checkpoint_name; podsim's fused
// QKV projection carries all of query_proj, key_proj, value_proj and qkv_proj.
enum class ActivationName : std::uint8_t {
    other,     // norms, residual adds, softmax: never named
    qkv_proj,  // query_proj, key_proj, value_proj, qkv_proj
    scores,    // attention logits (a dot with batch dimensions)
    context,   // attention output, before the output projection
    out_proj,  // output projection
    mlpwi,     // MLP input projection(s)
    mlpwo,     // MLP output projection
};

// What a remat policy does with one activation of a layer.
enum class Keep : std::uint8_t { recompute, save, offload };
inline constexpr std::size_t kCheckpointNames = static_cast<std::size_t>(ActivationName::mlpwo) + 1;

// Attention kernels (MaxText `attention`): dot_product materialises the S x S scores in HBM;
// flash (Pallas splash attention on TPU, FlashAttention-2) streams them through on-chip memory.
enum class Attention { dot_product, flash };
enum class LossLabels { ids, one_hot };
static_assert(kOptimizerNames.size() == static_cast<std::size_t>(Optimizer::sgd) + 1);
static_assert(kRematNames.size() == static_cast<std::size_t>(Remat::custom) + 1);
// training.attention's choices are kAttentionChoices (with the alias mha); its default is the first.
static_assert(kAttentionChoices[0] == "dot_product" && static_cast<int>(Attention::dot_product) == 0);

// Defaults: training_keys.hpp.

struct TrainingSpec {
    std::int64_t global_batch = 0;  // sequences (images) per optimizer step
    int seq_len = 0;                // text models
    int microbatches = static_cast<int>(training_key("training.microbatches").integer_default());
    core::DType dtype = training_key("training.dtype").choice_default<core::DType>();
    core::DType param_dtype = training_key("training.param_dtype").choice_default<core::DType>();
    Optimizer optimizer = training_key("training.optimizer").choice_default<Optimizer>();
    Remat remat = training_key("training.remat").choice_default<Remat>();
    // remat: custom (MaxText's keys of the same names): where each named activation goes, by
    // ActivationName, and the layer's input.
    std::array<Keep, kCheckpointNames> custom_keep = {Keep::recompute, Keep::recompute, Keep::recompute,
                                                      Keep::recompute, Keep::recompute, Keep::recompute,
                                                      Keep::recompute};
    Keep decoder_layer_input = training_key("training.decoder_layer_input").choice_default<Keep>();
    // fp32 master copy of bf16 parameters kept by the optimizer (mixed precision), if any.
    std::optional<core::DType> master_dtype;
    // Megatron sequence parallelism: activations between the tensor-parallel regions are split
    // along the sequence over the tensor axis; all-gather before and reduce-scatter after them
    // replace the all-reduce.
    bool tensor_sequence = training_key("training.tensor_sequence").boolean_default();
    // The layers as one `while` loop (jax.lax.scan) or unrolled; config::parse_run resolves the
    // default from runtime.framework.
    bool scan_layers = true;
    LossLabels loss_labels = training_key("training.loss_labels").choice_default<LossLabels>();
    Attention attention = training_key("training.attention").choice_default<Attention>();
    // Query and key/value block of the flash kernel, in tokens: causal attention skips the blocks
    // above the diagonal. 512 is MaxText's default (base.yml sa_block_q / sa_block_kv).
    int flash_block = static_cast<int>(training_key("training.sa_block_q").integer_default());
    // Mixture of experts (MaxText's names, training_keys.hpp).
    double capacity_factor = training_key("training.capacity_factor").default_value;
    bool sparse_matmul = training_key("training.sparse_matmul").boolean_default();
    bool megablox = training_key("training.megablox").boolean_default();
    int tile_batch_seq = static_cast<int>(training_key("training.tile_batch_seq").integer_default());
    double load_balance_loss_weight = training_key("training.load_balance_loss_weight").default_value;
    // Pipeline parallelism (MaxText's names; used when the mesh has a pipeline axis): microbatches
    // through the stages per step (0: as many as stages), consecutive layers per stage and repeat, and
    // how often a stage gathers its FSDP-sharded weights (per microbatch unless one of the two).
    int pipeline_microbatches = 0;
    int layers_per_pipeline_stage =
        static_cast<int>(training_key("training.num_layers_per_pipeline_stage").integer_default());
    bool pipeline_fsdp_ag_per_repeat = training_key("training.pipeline_fsdp_ag_per_repeat").boolean_default();
    bool pipeline_fsdp_ag_once = training_key("training.pipeline_fsdp_ag_once").boolean_default();

    bool operator==(const TrainingSpec&) const = default;
};

std::string_view optimizer_name(Optimizer optimizer);
// What the remat policy does with one activation of a layer: `unbatched_weight_dot` for a weight
// matmul that is a dot_general without batch dimensions (what the `minimal` policies save), `dot`
// for any dot_general.
Keep remat_keep(const TrainingSpec& training, ActivationName name, bool unbatched_weight_dot, bool dot);
// Whether the policy moves anything to host memory.
bool offloads(const TrainingSpec& training);
std::string_view remat_name(Remat remat);
std::vector<std::string> remat_names();  // in enum order
// The JAX policy a remat name maps to, for explain and reports.
std::string_view remat_jax_policy(Remat remat);
std::string_view attention_name(Attention attention);

}  // namespace podsim::workload
