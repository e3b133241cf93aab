#include "workload/model_spec.hpp"

#include <algorithm>
#include <cmath>

namespace podsim::workload {

double ModelSpec::tokens_per_expert(std::int64_t tokens) const {
    return std::ceil(static_cast<double>(tokens) * experts_per_token / experts);
}

std::int64_t ModelSpec::expert_capacity(std::int64_t tokens, double capacity_factor) const {
    return static_cast<std::int64_t>(std::max(tokens_per_expert(tokens) * capacity_factor, capacity_factor));
}

std::string_view family_name(ModelFamily family) {
    return kFamilyNames[static_cast<std::size_t>(family)];
}

std::string_view activation_name(Activation activation) {
    return kActivationNames[static_cast<std::size_t>(activation)];
}

std::string_view position_name(PositionEmbedding position) {
    return kPositionNames[static_cast<std::size_t>(position)];
}

ParamCount count_params(const ModelSpec& m) {
    using I = std::int64_t;
    const I d = m.d_model;
    const I ff = m.d_ff;
    const I q = m.attention_width();
    const I kv = m.kv_width();
    const I b = m.bias ? 1 : 0;
    ParamCount c;
    I attention = d * q + 2 * d * kv + q * d + b * (q + 2 * kv + d);
    I mlp = (m.gated() ? 3 : 2) * d * ff + b * ((m.gated() ? 2 : 1) * ff + d);
    I norm = d + b * d;  // scale, and a shift when the model has biases (LayerNorm vs RMSNorm)
    I norms = (m.parallel_block ? 1 : 2) * norm;
    c.per_layer = attention + mlp + norms;
    if (m.position == PositionEmbedding::relative) c.per_layer += 32 * m.heads;  // T5 buckets
    if (m.is_vit()) {
        I patch_in = static_cast<I>(m.channels) * m.patch_size * m.patch_size;
        c.embedding =
            patch_in * d + d /*patch bias*/ + d /*class token*/ + static_cast<I>(m.patches() + 1) * d;
        c.head = norm + d * m.num_classes + m.num_classes;
    } else {
        c.embedding = m.vocab * d;
        if (m.position == PositionEmbedding::learned) c.embedding += static_cast<I>(m.max_positions) * d;
        c.head = norm + (m.tied_embeddings ? 0 : d * m.vocab);
    }
    c.total = c.embedding + c.per_layer * m.layers + c.head;
    c.active = c.total;
    if (m.is_moe()) {
        // Router (gate, d x E, no bias as in MaxText's GateLogit), the routed and the shared experts
        // (MLPs of moe_d_ff without biases) in place of the dense MLP.
        const I moe_ff = m.moe_d_ff > 0 ? m.moe_d_ff : ff;
        const I expert = (m.gated() ? 3 : 2) * d * moe_ff;
        c.routed_experts_per_moe_layer = static_cast<I>(m.experts) * expert;
        c.per_moe_layer = attention + norms + d * m.experts + c.routed_experts_per_moe_layer +
                          static_cast<I>(m.shared_experts) * expert;
        if (m.position == PositionEmbedding::relative) c.per_moe_layer += 32 * m.heads;
        const I moe_layers = m.moe_layers();
        c.total = c.embedding + c.per_layer * (m.layers - moe_layers) + c.per_moe_layer * moe_layers + c.head;
        c.active = c.total - static_cast<I>(m.experts - m.experts_per_token) * expert * moe_layers;
    }
    return c;
}

}  // namespace podsim::workload
