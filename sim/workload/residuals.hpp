#pragma once

#include <vector>

#include "workload/model_spec.hpp"
#include "workload/op.hpp"
#include "workload/training_spec.hpp"

namespace podsim::workload {

// What JAX's reverse-mode autodiff keeps for the backward of the primitives a layer is made of:
// each primitive's JVP rule names the primal values its linear (tangent) part reads, and
// linearize's partial evaluation keeps exactly those (jax/_src/lax/lax.py `defjvp`/`defjvp2`,
// jax/_src/nn/functions.py, jax/_src/interpreters/partial_eval.py). Tensors carry JAX's shapes
// (batch extents per sample, unit dimensions dropped) so that they can be set against a compiled
// module's residual tuple. docs/model.md "Residuals" gives every rule with its source.
class Residuals {
  public:
    Residuals(const ModelSpec& model, const TrainingSpec& training);
    // `fused`: the rules of an unrolled program, whose residuals XLA's fusion decides (norm,
    // activation and softmax); by default when training.scan_layers is false.
    Residuals(const ModelSpec& model, const TrainingSpec& training, bool fused);

    // The layer's normalisation (RMSNorm for decoders, LayerNorm otherwise), without its output:
    //   RMSNorm: x·x and x·r keep the fp32 input, rsqrt its coefficient, r·x the statistic,
    //     y·scale the normalised fp32 y and the scale.
    //   LayerNorm: (x-μ)² keeps 2(x-μ), (x-μ)·r keeps x-μ and r, ·scale the product and the scale,
    //     rsqrt its coefficient; the bias add keeps nothing.
    std::vector<Tensor> norm() const;
    // The MLP activation's internals, without its output (the down projection's operand):
    //   SwiGLU silu(g)·u: g, sigmoid(g), its derivative σ(1-σ), silu(g), u;
    //   GELU (tanh form): a, 3a², and tanh in two stacks: JAX's rules keep tanh, 1-tanh and the
    //     cdf 0.5(1+tanh) besides, and XLA's loop stacks hold tanh twice and rebuild the rest in
    //     the backward (fixtures gpt2-xl-b4-none-dot, vit-b16-b256-none-dot);
    //   GeGLU: GELU's four on g, gelu(g), u;  ReLU: the predicate a > 0 (one byte).
    std::vector<Tensor> activation() const;
    // What a value rebuilt before its layer's backward (a remat recompute) holds until that backward:
    // the recompute and the backward are one computation (the scan's backward body), whose fusion
    // materialises fewer values than JAX's rules name (fixtures vit-b128-full-dot, gpt2xl-b8-full-dot:
    // the backward loops' buffers).
    //   LayerNorm: the statistic; the normalised values are recomputed inside their readers.
    //   GELU (tanh form): the pre-activation and tanh, in the compute dtype; 3a², 1-tanh and the cdf
    //     are recomputed inside the derivative's fusion.
    //   SwiGLU, GeGLU: the dot outputs g and u (mlp_inputs()). One multi-output fusion reads them and
    //     the product's gradient and writes dg, du and the product (the dumped 1B step's backward
    //     loop, fixture dump-1b-b8-minimal-flash: fused_add_multiply; σ(g), σ(1-σ), silu(g) are never
    //     written).
    //   RMSNorm, ReLU: as norm() and activation() (docs/model.md, "Rebuilt values").
    std::vector<Tensor> rebuilt_norm() const;
    std::vector<Tensor> rebuilt_activation() const;
    // What a policy saving the MLP input projection keeps (checkpoint name mlpwi): its dot outputs,
    // g and u for a gated MLP, the pre-activation otherwise.
    std::vector<Tensor> mlp_inputs() const;
    // The compute-dtype cast of a layer weight [rows, cols], which the backward's dots read: a
    // residual when the parameters are stored in another dtype (none otherwise: the dot reads the
    // scanned parameter itself, which JAX forwards instead of stacking). Sharded as the parameter.
    std::vector<Tensor> weight_cast(std::initializer_list<Extent> dims) const;
    // Dot-product attention, scores s = qkᵀ in fp32: softmax = exp(s - max)/Σ keeps exp(s - max)
    // (fp32, [B,H,S,S]), the sum and div's coefficient -Σ⁻² (fp32, [B,H,S]).
    std::vector<Tensor> softmax() const;
    // The causal mask, broadcast to the scores ([B,H,S,S] predicate): select's transpose reads it.
    Tensor causal_mask() const;
    // The -inf fill of the masked scores ([B,H,S,S] fp32): read by the forward only.
    Tensor mask_fill() const;
    // What the forward loop of a scanned model takes besides the layer input and its parameters:
    // values that depend on no layer input, which JAX's partial evaluation of the scan computes
    // once, outside the loop (jax/_src/lax/control_flow/loops.py, `_scan_partial_eval`: "hoist
    // loop-invariant residuals out of the loop"). With dot-product attention in a causal model:
    // the broadcast mask and fill of jnp.where.
    std::vector<Tensor> loop_invariants() const;
    // Flash attention's softmax statistic (fp32, one per query and head).
    Tensor flash_statistics() const;

    // Activation shapes, batch first: [B,S,d] and the like.
    Tensor tokens(Extent feature, int element_bytes) const;
    Tensor tokens(Extent a, Extent b, int element_bytes) const;
    int act_bytes() const { return a_; }

  private:
    const ModelSpec& m_;
    const TrainingSpec& t_;
    int a_;  // compute dtype bytes
    int p_;  // parameter dtype bytes
    std::int64_t S_;
    bool fused_;
};

}  // namespace podsim::workload
