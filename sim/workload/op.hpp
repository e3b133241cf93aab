#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "workload/training_spec.hpp"

namespace podsim::workload {

// How a tensor dimension is split across chips: its role. The parallel module turns it into a
// divisor, the product of the axes of every parallelism kind that splits the role
// (parallel/parallelism.hpp).
enum class Shard : std::uint8_t {
    none,
    batch,   // over every data-parallel axis (data, fsdp, dcn data)
    tensor,  // over the tensor axis (heads, MLP width)
    param,   // parameters and their state: over fsdp and tensor
    expert,  // the experts of an MoE layer (and their weights): over the expert axis
    // The batch of tokens dispatched to their experts: over the data-parallel axes but expert,
    // whose place the experts take (MaxText's activation_batch_no_exp)
    batch_no_expert,
};
inline constexpr std::size_t kShardRoles = static_cast<std::size_t>(Shard::batch_no_expert) + 1;
constexpr bool per_sample(Shard shard) {
    return shard == Shard::batch || shard == Shard::batch_no_expert;
}

// A batch-sharded extent counts per sample: the lowered graph does not depend on the batch (one
// graph serves every batch size of a sweep), and in a step it is `size` times the samples of a
// microbatch (step_size).
struct Extent {
    std::int64_t size = 1;
    Shard shard = Shard::none;
};

// The extent's size in a step of `samples` sequences (or images) per microbatch.
inline std::int64_t step_size(const Extent& e, std::int64_t samples) {
    return per_sample(e.shard) ? e.size * samples : e.size;
}

struct Tensor {
    std::array<Extent, 4> dims{};
    int rank = 0;
    int element_bytes = 2;

    static Tensor of(std::initializer_list<Extent> extents, int element_bytes);
};

enum class OpKind : std::uint8_t {
    matmul,     // a dot fusion: matmul with fused elementwise prologue/epilogue
    fusion,     // loop or reduction fusion: memory-bound elementwise work
    optimizer,  // parameter update, memory-bound
    // Tokens sent to the chips of their experts, or back: an all-to-all over the expert axis where
    // there is one, else nothing (the partitioner decides); no compute.
    exchange,
};

enum class Phase : std::uint8_t { forward, backward, recompute, optimizer };

// How a forward op's backward is lowered, where it differs from the generic rule.
enum class BackwardKind : std::uint8_t {
    standard,           // matmul: data- and weight-gradient matmuls; fusion: reads inputs and output grads
    no_input_gradient,  // first layer of the network (patch embedding): weight gradient only
    scatter_to_table,   // embedding lookup: scatter-add into a dense table gradient
    loss,               // softmax cross-entropy: reads the logits, writes their gradient
    flash_attention,    // FlashAttention-2 backward: one kernel recomputing the scores (5 matmuls)
    no_rhs_gradient,    // an einsum with a one-hot operand (MoE dispatch): input gradient only
};

// C[batch..., m, n] = A[batch..., m, k] x B[batch..., k, n]; FLOPs = 2 * batch * m * n * k.
struct MatmulShape {
    std::array<Extent, 2> batch{};
    Extent m, n, k;
};

// One fused op as XLA would emit it, for the whole (unsharded) step of one microbatch (its batch
// extents per sample: Extent).
struct Op {
    std::string name;
    OpKind kind = OpKind::fusion;
    Phase phase = Phase::forward;
    int layer = -1;                   // transformer block, or -1
    int param_group = -1;             // parameters this op reads (for FSDP gathers), or -1
    bool attention_internal = false;  // scores, softmax, context: what remat=attention recomputes
    // Not recomputed under the remat policy: what the policy saves of it (`saved`) stays in HBM
    // until its layer's backward.
    bool kept_for_backward = false;
    bool offloaded = false;  // `saved` kept in pinned host memory until the backward (remat offload)
    // The residuals this op keeps for the backward (a forward op, or a recompute copy until its
    // layer's backward ends), as JAX's autodiff keeps them: residuals.hpp, docs/model.md "Residuals".
    // `output_saved`: its own output is one of them (and not also a temporary).
    std::vector<Tensor> saved;
    bool output_saved = false;
    // A backward op: the recompute copy (graph index) whose `saved` it is the last to read.
    int frees_saved_of = -1;
    BackwardKind backward = BackwardKind::standard;
    ActivationName activation = ActivationName::other;  // MaxText's checkpoint_name, for remat
    bool weight_matmul = false;                         // a dot with a parameter operand (no batch dims)
    MatmulShape matmul;                                 // when kind == matmul
    // A weight matmul standing for several weights that read the same input (q, k and v; gate and
    // up), which XLA merges into one dot: each weight's share of n. Their input gradients share no
    // operand and stay separate dots, summed: the input-gradient op's k in these parts.
    std::vector<Extent> merged_weights;
    std::vector<Extent> k_parts;  // matmul: k as separate dots whose outputs are summed (empty: one)
    // Executed FLOPs relative to 2*batch*m*n*k: a fused kernel that runs several matmuls of this
    // shape (flash attention), or skips masked blocks (causal flash attention).
    double flop_scale = 1.0;
    // A grouped matmul (MoE experts, megablox gmm): m's rows in `groups` groups, computed in tiles of
    // `group_tile` rows, each tile where a group starts once more (0: not grouped).
    int group_tile = 0;
    Extent groups;
    // Works on every layer's stacked values at once: the layers are one scan loop (no pipeline).
    bool whole_layer_stack = false;
    std::vector<Tensor> reads;
    std::vector<Tensor> writes;
};

const char* phase_name(Phase phase);

}  // namespace podsim::workload
