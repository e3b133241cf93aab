#include "workload/training_spec.hpp"

#include <string>
#include <vector>

namespace podsim::workload {

std::string_view optimizer_name(Optimizer optimizer) {
    return kOptimizerNames[static_cast<std::size_t>(optimizer)];
}

namespace {

struct RematInfo {
    Remat remat;
    std::string_view jax_policy;
};

constexpr RematInfo kRemats[] = {
    {Remat::none, "no jax.checkpoint (everything saved)"},
    {Remat::full, "jax.checkpoint_policies.nothing_saveable"},
    {Remat::save_dots, "jax.checkpoint_policies.checkpoint_dots"},
    {Remat::attention, "everything saved but the attention scores, softmax and context"},
    {Remat::minimal, "jax.checkpoint_policies.checkpoint_dots_with_no_batch_dims"},
    {Remat::save_dot_except_mlpwi,
     "save_only_these_names(query_proj, value_proj, key_proj, qkv_proj, out_proj, mlpwo)"},
    {Remat::save_dot_except_mlp,
     "save_only_these_names(query_proj, value_proj, key_proj, qkv_proj, out_proj)"},
    {Remat::save_qkv_proj, "save_only_these_names(query_proj, value_proj, key_proj, qkv_proj)"},
    {Remat::save_dot_with_context_except_mlp,
     "save_only_these_names(query_proj, value_proj, key_proj, qkv_proj, context, out_proj)"},
    {Remat::minimal_flash,
     "save_from_both_policies(checkpoint_dots_with_no_batch_dims, save_only_these_names(context))"},
    {Remat::qkv_proj_offloaded,
     "save_and_offload_only_these_names(offloaded: query_proj, value_proj, key_proj; device -> pinned_host)"},
    {Remat::minimal_offloaded, "offload_dot_with_no_batch_dims(offload_src=device, offload_dst=pinned_host)"},
    {Remat::custom,
     "save_and_offload_only_these_names(names_which_can_be_saved: those at device, "
     "names_which_can_be_offloaded: those at offload)"},
};

const RematInfo& info(Remat remat) {
    for (const auto& r : kRemats) {
        if (r.remat == remat) return r;
    }
    return kRemats[0];
}

}  // namespace

std::string_view remat_name(Remat remat) {
    return kRematNames[static_cast<std::size_t>(remat)];
}

std::string_view remat_jax_policy(Remat remat) {
    return info(remat).jax_policy;
}

std::vector<std::string> remat_names() {
    return {kRematNames.begin(), kRematNames.end()};
}

std::string_view attention_name(Attention attention) {
    return attention == Attention::flash ? "flash" : "dot_product";
}

// MaxText layers/decoders.py maps each remat_policy to a JAX policy; the layer input (the scan
// carry) is always kept, whatever the policy.
Keep remat_keep(const TrainingSpec& training, ActivationName name, bool unbatched_weight_dot, bool dot) {
    using N = ActivationName;
    auto saved_if = [](bool saved) { return saved ? Keep::save : Keep::recompute; };
    switch (training.remat) {
        case Remat::none:
            return Keep::save;
        case Remat::full:
            return Keep::recompute;
        case Remat::save_dots:
            return saved_if(dot);  // every dot_general, batched attention ones included
        case Remat::attention:
            return saved_if(name != N::scores && name != N::context);
        case Remat::minimal:
            return saved_if(unbatched_weight_dot);
        case Remat::save_dot_except_mlpwi:
            return saved_if(name == N::qkv_proj || name == N::out_proj || name == N::mlpwo);
        case Remat::save_dot_except_mlp:
            return saved_if(name == N::qkv_proj || name == N::out_proj);
        case Remat::save_qkv_proj:
            return saved_if(name == N::qkv_proj);
        case Remat::save_dot_with_context_except_mlp:
            return saved_if(name == N::qkv_proj || name == N::context || name == N::out_proj);
        case Remat::minimal_flash:
            return saved_if(unbatched_weight_dot || name == N::context);
        case Remat::qkv_proj_offloaded:
            return name == N::qkv_proj ? Keep::offload : Keep::recompute;
        case Remat::minimal_offloaded:
            return unbatched_weight_dot ? Keep::offload : Keep::recompute;
        case Remat::custom:
            return training.custom_keep[static_cast<std::size_t>(name)];
    }
    return Keep::recompute;
}

bool offloads(const TrainingSpec& training) {
    if (training.remat == Remat::qkv_proj_offloaded || training.remat == Remat::minimal_offloaded)
        return true;
    if (training.remat != Remat::custom) return false;
    if (training.decoder_layer_input == Keep::offload) return true;
    for (Keep keep : training.custom_keep)
        if (keep == Keep::offload) return true;
    return false;
}

}  // namespace podsim::workload
