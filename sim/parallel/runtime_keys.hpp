#pragma once

#include <array>
#include <string_view>

#include "core/key.hpp"

namespace podsim::parallel {

// In the order of Framework.
inline constexpr std::array<std::string_view, 3> kFrameworkNames = {"jax", "pytorch-xla", "pytorch-xla-spmd"};
// runtime.host_init: full = every process builds the whole model in host RAM.
inline constexpr std::array<std::string_view, 2> kHostInitNames = {"full", "sharded"};

// Every key of a run config's `runtime:` block (`podsim explain run`). Adding a key: one line here
// (its default, bounds and help live nowhere else), then read it in config/run.cpp with
// MapReader's Key overloads and give the RuntimeSpec member its default from runtime_key("...").
using core::Dimension;
using core::KeyKind;
inline constexpr core::Key kRuntimeKeys[] = {
    {.path = "runtime.framework",
     .kind = KeyKind::choice,
     .choices = kFrameworkNames,
     .default_string = "jax",
     .help = "default overlap and host behaviour: jax; pytorch-xla (one process per chip, collectives issued "
             "by the framework, e.g. FSDP); pytorch-xla-spmd (one process per host, GSPMD partitions the "
             "graph, as JAX)"},
    {.path = "runtime.async_collectives",
     .kind = KeyKind::boolean,
     .default_note = "jax and pytorch-xla-spmd: true, pytorch-xla: false",
     .help = "collectives overlap compute (start/done pairs) or block it"},
    {.path = "runtime.host_overhead",
     .kind = KeyKind::quantity,
     .dimension = Dimension::time,
     .default_note = "calibration host_overhead_<framework>",
     .maximum = 3600,
     .help = "host time per step"},
    {.path = "runtime.compile_time",
     .kind = KeyKind::quantity,
     .dimension = Dimension::time,
     .default_note = "calibration compile_time_base + compile_time_per_op x ops",
     .maximum = 86400,
     .help = "XLA compile time, reported apart from the step"},
    {.path = "runtime.recompile_every_step",
     .kind = KeyKind::boolean,
     .help = "the graph changes every step, so every step pays the compile time on the host"},
    {.path = "runtime.collective_matmul",
     .kind = KeyKind::boolean,
     .default_note = "jax with async collectives: true, otherwise false",
     .help =
         "XLA's collective matmul (async collective fusion): sequence-parallel gathers and reduce-scatters "
         "run in ring steps under their matmul (docs/model.md)"},
    {.path = "runtime.fp32_reduce_scatter",
     .kind = KeyKind::boolean,
     .help = "FSDP reduce-scatters gradients in fp32 instead of the compute dtype (PyTorch/XLA FSDP's "
             "fp32_reduce_scatter; all-gathers stay in the compute dtype)"},
    {.path = "runtime.gather_via_all_reduce",
     .kind = KeyKind::boolean,
     .default_note = "pytorch-xla: true, otherwise false",
     .help = "FSDP all-gathers run as an all-reduce of the zero-padded shard, moving twice the bytes "
             "(PyTorch/XLA's xm.all_gather with pin_layout on TPU, the default of its FSDP wrapper)"},
    {.path = "runtime.dcn_overlap",
     .kind = KeyKind::boolean,
     .default_value = 1,
     .help =
         "the cross-slice gradient all-reduce of each parameter group runs under the rest of the backward, "
         "as XLA schedules in-program async collectives (MaxText's "
         "--xla_tpu_enable_data_parallel_all_reduce_opt "
         "pipelines them across scanned layers); false: it starts when the backward has finished (PaLM's "
         "Pathways cross-pod transfer)"},
    {.path = "runtime.host_init",
     .kind = KeyKind::choice,
     .choices = kHostInitNames,
     .default_note = "pytorch-xla and pytorch-xla-spmd: full, jax: sharded",
     .help =
         "full: every process builds the whole model in host RAM before sharding; sharded: deferred init"},
    {.path = "runtime.prefetch_depth",
     .kind = KeyKind::integer,
     .unit = "parameter groups",
     .default_value = 1,
     .minimum = 0,
     .maximum = 1024,
     .help = "FSDP all-gathers issued this many parameter groups ahead (async)"},
};

consteval const core::Key& runtime_key(std::string_view path) {
    return core::find_key(kRuntimeKeys, path);
}

}  // namespace podsim::parallel
