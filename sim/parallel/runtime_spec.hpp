#pragma once

#include <optional>
#include <string_view>

#include "parallel/runtime_keys.hpp"

namespace podsim::parallel {

// pytorch_xla: multi-process (PJRT, one process per chip; FSDP/DDP issue their own collectives).
// pytorch_xla_spmd: one process per host; XLA's GSPMD partitioner inserts the collectives
// (torch_xla.distributed.spmd, `xr.use_spmd()`).
enum class Framework { jax, pytorch_xla, pytorch_xla_spmd };
static_assert(kFrameworkNames.size() == static_cast<std::size_t>(Framework::pytorch_xla_spmd) + 1);

std::string_view framework_name(Framework framework);

// Both PyTorch/XLA modes trace lazy tensors on the host every step.
constexpr bool is_pytorch_xla(Framework framework) {
    return framework == Framework::pytorch_xla || framework == Framework::pytorch_xla_spmd;
}

// How the training framework runs the step on the device (schema podsim.run/v1 `runtime:`).
struct RuntimeSpec {
    Framework framework = runtime_key("runtime.framework").choice_default<Framework>();
    std::optional<bool> async_collectives;  // default: jax async, pytorch-xla synchronous
    std::optional<double> host_overhead;    // seconds per step; default from calibration
    // FSDP all-gathers issued ahead of use (async only)
    int prefetch_depth = static_cast<int>(runtime_key("runtime.prefetch_depth").integer_default());
    std::optional<double> compile_time;  // seconds; default from calibration
    // the graph changes every step (PyTorch/XLA pitfall)
    bool recompile_every_step = runtime_key("runtime.recompile_every_step").boolean_default();
    // How parameters are first materialised: the whole model in host RAM in every process (the
    // common PyTorch habit), or each process creating only its chips' shards (JAX jit with
    // shardings; PyTorch/XLA deferred init).
    std::optional<bool> host_full_init;
    // XLA's collective matmul (async collective fusion): the sequence-parallel all-gather before a
    // column-parallel matmul and the reduce-scatter after a row-parallel one run in ring steps under
    // the matmul's own chunks. MaxText's TPU scripts turn it on (LIBTPU_INIT_ARGS
    // --xla_tpu_enable_async_collective_fusion=true ..._fuse_all_gather=true
    // ..._multiple_steps=true --xla_tpu_overlap_compute_collective_tc=true).
    std::optional<bool> collective_matmul;
    // PyTorch/XLA FSDP's `fp32_reduce_scatter`: gradients reduce-scattered in fp32.
    bool fp32_reduce_scatter = runtime_key("runtime.fp32_reduce_scatter").boolean_default();
    // PyTorch/XLA's xm.all_gather with pin_layout=True (its FSDP wrapper's default,
    // pin_layout_in_collective_ops) is an all-reduce of the shard zero-padded to the full size on TPU:
    // `_all_gather_using_all_reduce` in torch_xla/core/xla_model.py (2.0 to 2.5).
    std::optional<bool> gather_via_all_reduce;
    // The gradient all-reduce over DCN of each parameter group issued as its gradients are complete
    // (true), or after the whole backward (false: PaLM section 4, "the transfer does not start until
    // each core finishes computing the gradients").
    bool dcn_overlap = runtime_key("runtime.dcn_overlap").boolean_default();

    bool operator==(const RuntimeSpec&) const = default;

    // JAX/XLA issues async collective start/done pairs, and so does PyTorch/XLA SPMD, whose
    // collectives the same GSPMD partitioner and latency-hiding scheduler place (PyTorch/XLA SPMD user
    // guide); PyTorch/XLA FSDP as benchmarked on TPU v4 ran them synchronously (PyTorch blog on FSDP
    // GPT-2, 2023).
    bool async() const { return async_collectives.value_or(framework != Framework::pytorch_xla); }
    bool overlaps_collective_matmul() const {
        return collective_matmul.value_or(framework == Framework::jax && async());
    }
    bool gathers_via_all_reduce() const {
        return gather_via_all_reduce.value_or(framework == Framework::pytorch_xla);
    }
    // PyTorch/XLA traces the graph on the host every step before the device runs it (lazy tensors);
    // JAX dispatches asynchronously, so the host runs ahead of the device.
    bool host_blocks_device() const { return is_pytorch_xla(framework); }
    // PyTorch builds modules on the CPU before moving them to the device: once per process.
    bool full_model_on_host() const { return host_full_init.value_or(is_pytorch_xla(framework)); }
    // PyTorch/XLA with PJRT runs one process per chip (on v2/v3 with one thread per TensorCore: "4
    // processes with 2 threads each", PyTorch/XLA PJRT docs); JAX and PyTorch/XLA SPMD one per host.
    bool process_per_chip() const { return framework == Framework::pytorch_xla; }
};

}  // namespace podsim::parallel
