#include "workload/residuals.hpp"

#include "core/dtype.hpp"

namespace podsim::workload {
namespace {

Extent none(std::int64_t n) {
    return Extent{n, Shard::none};
}
Extent batch(std::int64_t n) {
    return Extent{n, Shard::batch};
}
Extent tensor(std::int64_t n) {
    return Extent{n, Shard::tensor};
}

constexpr int kFp32 = 4;
constexpr int kPredicate = 1;

}  // namespace

Residuals::Residuals(const ModelSpec& model, const TrainingSpec& training)
    : m_(model),
      t_(training),
      a_(static_cast<int>(core::dtype_bytes(training.dtype))),
      p_(static_cast<int>(core::dtype_bytes(training.param_dtype))),
      S_(model.tokens_per_sample(training.seq_len)),
      fused_(!training.scan_layers) {}

Residuals::Residuals(const ModelSpec& model, const TrainingSpec& training, bool fused)
    : Residuals(model, training) {
    fused_ = fused;
}

Tensor Residuals::tokens(Extent feature, int element_bytes) const {
    return Tensor::of({batch(1), none(S_), feature}, element_bytes);
}

Tensor Residuals::tokens(Extent a, Extent b, int element_bytes) const {
    return Tensor::of({batch(1), none(S_), a, b}, element_bytes);
}

std::vector<Tensor> Residuals::norm() const {
    const Extent d = none(m_.d_model);
    // Statistics are [B,S,1] in JAX: the unit dimension is dropped.
    const Tensor statistic = Tensor::of({batch(1), none(S_)}, kFp32);
    const Tensor scale = Tensor::of({d}, p_);
    const Tensor wide = tokens(d, kFp32);
    const bool rms = m_.family == ModelFamily::decoder;
    if (fused_) {
        // Unrolled, the backward's fusion recomputes the elementwise values from the statistics
        // and what the forward's reduction fusion wrote: LayerNorm's centred fp32 input (the
        // variance's operand, an output of the same multi-output fusion), RMSNorm's input.
        return {rms ? tokens(d, a_) : wide, statistic, statistic};
    }
    if (rms) return {wide, wide, statistic, statistic, scale};
    return {wide, wide, wide, statistic, statistic, scale};
}

std::vector<Tensor> Residuals::activation() const {
    const Tensor f = tokens(tensor(m_.d_ff), a_);
    if (fused_) {
        // Unrolled: the dot outputs and the transcendental (tanh, or the sigmoid's exp), which XLA's
        // fusion does not duplicate into the backward (an expensive op), computed in fp32; the
        // rest is recomputed from them.
        const Tensor transcendental = tokens(tensor(m_.d_ff), kFp32);
        switch (m_.activation) {
            case Activation::swiglu:
            case Activation::geglu:
                return {f, f, transcendental};
            case Activation::gelu:
                return {f, transcendental};
            case Activation::relu:
                return {f};
        }
    }
    switch (m_.activation) {
        case Activation::swiglu:
            return {f, f, f, f, f};
        case Activation::gelu:
            // a, 3a² and tanh twice: what the GPT-2 and ViT fixtures' forward loops stack (1-tanh and
            // the cdf 0.5(1+tanh) of JAX's rules are rebuilt from tanh in the backward).
            return {f, f, f, f};
        case Activation::geglu:
            return {f, f, f, f, f, f};
        case Activation::relu:
            return {tokens(tensor(m_.d_ff), kPredicate)};
    }
    return {};
}

std::vector<Tensor> Residuals::rebuilt_norm() const {
    if (m_.family == ModelFamily::decoder) return norm();
    return {Tensor::of({batch(1), none(S_)}, kFp32)};
}

std::vector<Tensor> Residuals::rebuilt_activation() const {
    if (m_.gated()) return mlp_inputs();
    if (m_.activation != Activation::gelu) return activation();
    const Tensor f = tokens(tensor(m_.d_ff), a_);
    return {f, f};
}

std::vector<Tensor> Residuals::mlp_inputs() const {
    const Tensor f = tokens(tensor(m_.d_ff), a_);
    if (m_.gated()) return {f, f};
    return {f};
}

std::vector<Tensor> Residuals::weight_cast(std::initializer_list<Extent> dims) const {
    if (t_.param_dtype == t_.dtype) return {};
    return {Tensor::of(dims, a_)};
}

std::vector<Tensor> Residuals::softmax() const {
    const Tensor statistic = Tensor::of({batch(1), tensor(m_.heads), none(S_)}, kFp32);
    // Unrolled, the backward recomputes exp(s - max) from the scores (the dot's output) and the
    // statistics.
    const int square_bytes = fused_ ? a_ : kFp32;
    return {Tensor::of({batch(1), tensor(m_.heads), none(S_), none(S_)}, square_bytes), statistic, statistic};
}

Tensor Residuals::causal_mask() const {
    return Tensor::of({batch(1), tensor(m_.heads), none(S_), none(S_)}, kPredicate);
}

Tensor Residuals::mask_fill() const {
    return Tensor::of({batch(1), tensor(m_.heads), none(S_), none(S_)}, kFp32);
}

std::vector<Tensor> Residuals::loop_invariants() const {
    if (!t_.scan_layers || t_.attention != Attention::dot_product || !m_.causal()) return {};
    return {causal_mask(), mask_fill()};
}

Tensor Residuals::flash_statistics() const {
    return Tensor::of({batch(1), tensor(m_.heads), none(S_)}, kFp32);
}

}  // namespace podsim::workload
