#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "collectives/collective_kind.hpp"
#include "network/axis_mapping.hpp"
#include "parallel/name_store.hpp"
#include "parallel/op_deps.hpp"
#include "workload/op.hpp"

namespace podsim::parallel {

// Categories shared with measured profiles (op-stats comparison): what XLA's op stats call them.
enum class OpCategory : std::uint8_t {
    matmul,  // convolution/dot fusions
    fusion,  // loop, input and output fusions (elementwise, reductions, optimizer)
    all_gather,
    reduce_scatter,
    all_reduce,
    all_to_all,
    collective_permute,
    host,
    copy,  // HBM <-> host memory transfers (remat offload), XProf's copy-start/copy-done
};
std::string_view category_name(OpCategory category);
constexpr bool is_collective(OpCategory category) {
    return category != OpCategory::matmul && category != OpCategory::fusion && category != OpCategory::host &&
           category != OpCategory::copy;
}
OpCategory category_of(collectives::CollectiveKind kind);

enum class ResourceKind : std::uint8_t { compute, ici, dcn, host, host_transfer };

// A group of chips a collective runs over: one ICI mesh axis, or the slices over DCN.
struct CommAxis {
    std::string name;  // "fsdp", "data", ...
    ResourceKind kind = ResourceKind::ici;
    int size = 1;
    std::vector<network::AxisDimPart> parts;  // ICI placement
    // The pipeline stage whose chips it connects: axes of different stages never share a link.
    int stage = 0;
};

// One op as every chip runs it (SPMD: all chips run the same program), with per-chip sizes.
struct DeviceOp {
    // In the program's NameStore (or a string literal): valid while a copy of the program lives.
    std::string_view name;
    // The flags and indices come first, together: a program holds thousands of ops per microbatch,
    // and padding between fields would make every pass over them touch more memory.
    OpCategory category = OpCategory::fusion;
    workload::Phase phase = workload::Phase::forward;
    bool kept_for_backward = false;  // compute ops: forward, not recomputed, holds saved_bytes
    bool offloaded = false;          // saved_bytes moved to host memory until its layer's backward
    bool output_saved = false;       // the output is part of saved_bytes (not also a temporary)
    // A matmul split in two to overlap a collective (collective matmul): the part that is not the
    // op's first is a continuation, counted with its op in op counts.
    bool continuation = false;
    bool to_host = true;  // copy ops: the direction
    // Reads or writes the S x S attention scores of dot-product attention (no fused kernel).
    bool attention_scores = false;
    int layer = -1;
    int microbatch = 0;
    int param_group = -1;
    int resource = 0;    // index into DeviceProgram::resources
    int source_op = -1;  // copy ops: the op whose output they move
    // Recompute copies: the op at whose end their saved bytes are freed (the backward of the forward
    // op they recompute); -1: when their layer's backward ends.
    int release_op = -1;
    collectives::CollectiveKind collective = collectives::CollectiveKind::all_gather;  // collective ops
    int comm_axis = -1;  // collective ops: index into DeviceProgram::comm_axes
    // compute ops
    double flops = 0.0;  // per chip, matmul FLOPs
    double bytes = 0.0;  // per chip, HBM bytes read + written
    double output_bytes = 0.0;
    // Residuals kept for the backward (workload::Op::saved): a kept forward op or a recompute copy
    // holds them from its start until its layer's backward ends.
    double saved_bytes = 0.0;
    double mm_batch = 1.0, mm_m = 0.0, mm_n = 0.0, mm_k = 0.0;  // per-chip matmul shape
    double flop_scale = 1.0;  // executed FLOPs / (2 batch m n k): fused multi-matmul kernels, skipped blocks
    // fp32 partial sums of a dot that XLA:GPU splits over its contraction (xla_gpu_split_k.hpp): live
    // while the op runs, beside its output.
    double split_k_bytes = 0.0;
    // collective ops
    double collective_bytes = 0.0;  // the full array, as the scaling book counts it
    OpDeps deps;                    // earlier ops (program order) that must finish first
};

struct Resource {
    std::string name;  // "compute", "ici:fsdp", "dcn:data", "host"
    ResourceKind kind = ResourceKind::compute;
    int comm_axis = -1;
    int stage = 0;  // the pipeline stage whose chips it belongs to
};

// Per-chip state of one pipeline stage that lives for the whole step (bytes).
struct StageState {
    double params_bytes = 0.0;
    double grads_bytes = 0.0;
    double optimizer_bytes = 0.0;
};

// The programs of one training step. Without pipeline parallelism every chip runs the same program
// (SPMD). With it, each pipeline stage runs a program of its own on resources of its own
// (Resource::stage), and ops wait for ops of other stages through collective-permutes: `ops` holds
// the programs of every stage, each in its own program order, interleaved in an order in which
// every op follows the ops it waits for.
// Where a buffer's bytes count in the memory breakdown (memory::MemoryBreakdown's fields).
enum class BufferHolder : std::uint8_t {
    params,
    grads,
    optimizer,
    activations,
    gathered_weights,
    collective_buffers,
    temporaries,
};

// A buffer of a program that states its memory itself (a compiled XLA module, whose buffers and
// their users are known): live from the start of op `first_op` to the end of op `last_op`; -1 for
// either end means the step's start or end (entry arguments, outputs).
struct Buffer {
    double bytes = 0.0;
    int first_op = -1;
    int last_op = -1;
    BufferHolder holder = BufferHolder::temporaries;
};

struct DeviceProgram {
    std::vector<DeviceOp> ops;  // program order
    std::vector<Resource> resources;
    std::vector<CommAxis> comm_axes;
    std::shared_ptr<const NameStore> names;  // what the ops' names point into, shared by copies
    long chips = 1;
    int microbatches = 1;
    // Per-chip state that lives for the whole step (bytes); with stages, the first stage's.
    double params_bytes = 0.0;
    double grads_bytes = 0.0;
    double optimizer_bytes = 0.0;
    int stages = 1;                       // pipeline stages: programs
    std::vector<StageState> stage_state;  // by stage, when stages > 1
    // When the gradients are allocated: the scanned layers' all at once when their backward loop
    // starts (XLA: the loop's zeroed accumulators), or, unrolled, each group's (group_grads_bytes,
    // by parameter group) by its first backward op.
    bool stacked_gradients = true;
    std::vector<double> group_grads_bytes;
    // By parameter group: no gradient buffer of its own. A JAX step of one microbatch takes the
    // gradient of a weight outside the layers that one matmul reads (an untied output layer) as that
    // matmul's weight-gradient output, in the compute dtype, and the optimizer update reads it there
    // (XLA fuses the cast to the parameter dtype into the update; docs/model.md "Temporaries").
    std::vector<bool> group_grad_in_dot_output;
    // The other groups outside the layers: a gradient whose first writer is a weight-gradient matmul
    // is that matmul's output cast to the parameter dtype (a tied token table's, which the input
    // embedding's scatter-add then adds into), so its buffer starts when the matmul ends. JAX, one
    // microbatch; with more, the accumulator is a loop carry, there from the start.
    bool grad_cast_after_weight_matmul = false;
    // Empty for a lowered model (memory::profile_memory models its memory); an imported module's
    // buffers (memory::profile_buffers replays them).
    std::vector<Buffer> buffers;
};

}  // namespace podsim::parallel
