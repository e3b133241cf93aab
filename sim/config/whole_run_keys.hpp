#pragma once

#include <array>
#include <cstddef>
#include <limits>
#include <string_view>

#include "core/key.hpp"

namespace podsim::config {

// Name tables of the whole run's enums (run_plan.hpp), in enum order.
inline constexpr std::array<std::string_view, 3> kOverlapNames = {"none", "run_post_order",
                                                                  "run_post_order_and_fetch"};
inline constexpr std::array<std::string_view, 3> kPaddingNames = {"none", "bucket", "max"};
inline constexpr std::array<std::string_view, 3> kAccumulateNames = {"none", "device", "host"};
inline constexpr std::array<std::string_view, 2> kCompileCacheNames = {"process", "persistent"};
inline constexpr std::array<std::string_view, 4> kDistributionNames = {"fixed", "uniform", "normal",
                                                                       "buckets"};

// Counts the whole run holds as 32-bit ints: larger values are refused rather than narrowed.
inline constexpr double kMaxWholeRunCount = std::numeric_limits<int>::max();

// Distinct programs one whole run may have (each is simulated, compiled and listed): beyond, a
// run is a sweep of runs rather than one. The ops without a lowering of one step each make a
// program, so their count is bounded below that.
inline constexpr std::size_t kMaxWholeRunPrograms = 100'000;
inline constexpr double kMaxUnloweredOps = 10'000;

// `whole_run:` of a run config (a run of many steps; config/whole_run_block.cpp reads it). Adding
// a key: one line here (its default, bounds and help live nowhere else), read it in
// whole_run_block.cpp with MapReader's Key overloads, and give the RunPlan member its default from
// whole_run_key("...").
using core::KeyKind;
inline constexpr core::Key kWholeRunKeys[] = {
    {.path = "whole_run",
     .kind = KeyKind::mapping,
     .default_note = "(none: one step)",
     .help = "a run of many steps: host work, compile cache, transfers (podsim run prints the whole run)"},
    {.path = "whole_run.train_steps",
     .kind = KeyKind::integer,
     .unit = "steps",
     .default_value = 0,
     .minimum = 0,
     .maximum = kMaxWholeRunCount,
     .help = "training steps (forward, backward, optimizer)"},
    {.path = "whole_run.log_every",
     .kind = KeyKind::integer,
     .unit = "steps",
     .default_value = 0,
     .minimum = 0,
     .maximum = kMaxWholeRunCount,
     .help = "a host sync every k train steps (loss.item()): waits for the step, one device-to-host "
             "transfer; 0: never"},
    {.path = "whole_run.last_batch",
     .kind = KeyKind::integer,
     .unit = "samples",
     .default_value = 0,
     .minimum = 0,
     .maximum = kMaxWholeRunCount,
     .help = "samples in a last, partial training batch: a new shape; 0: none"},
    {.path = "whole_run.seq_len",
     .kind = KeyKind::mapping,
     .default_note = "{distribution: fixed}",
     .help = "the sequence length of each batch"},
    {.path = "whole_run.seq_len.distribution",
     .kind = KeyKind::choice,
     .choices = kDistributionNames,
     .default_string = "fixed",
     .help = "fixed: training.seq_len; uniform or normal: per sample, clipped to [min, max], the batch takes "
             "its longest; buckets: one of `buckets` per batch with `weights`"},
    {.path = "whole_run.seq_len.min",
     .kind = KeyKind::integer,
     .unit = "tokens",
     .default_note = "(required for uniform, normal)",
     .minimum = 1,
     .maximum = kMaxWholeRunCount,
     .help = "shortest sample"},
    {.path = "whole_run.seq_len.max",
     .kind = KeyKind::integer,
     .unit = "tokens",
     .default_note = "(required for uniform, normal, padding max)",
     .minimum = 1,
     .maximum = kMaxWholeRunCount,
     .help = "longest sample"},
    {.path = "whole_run.seq_len.mean",
     .kind = KeyKind::number,
     .unit = "tokens",
     .default_note = "(required for normal)",
     .help = "mean sample length"},
    {.path = "whole_run.seq_len.stddev",
     .kind = KeyKind::number,
     .unit = "tokens",
     .default_note = "(required for normal)",
     .help = "standard deviation of the sample length"},
    {.path = "whole_run.seq_len.buckets",
     .kind = KeyKind::list,
     .default_note = "unset",
     .help = "lengths batches are padded up to (padding: bucket), or drawn from (distribution: buckets)",
     .type = "list of int"},
    {.path = "whole_run.seq_len.weights",
     .kind = KeyKind::list,
     .default_note = "equal",
     .help = "relative frequency of each bucket (distribution: buckets)",
     .type = "list of number"},
    {.path = "whole_run.seq_len.padding",
     .kind = KeyKind::choice,
     .choices = kPaddingNames,
     .default_string = "none",
     .help = "none: each batch padded to its longest sample (a new program per new length); bucket: up to "
             "the next bucket; max: always max"},
    {.path = "whole_run.eval",
     .kind = KeyKind::mapping,
     .default_note = "{}",
     .help = "evaluation (forward only)"},
    {.path = "whole_run.eval.every",
     .kind = KeyKind::integer,
     .unit = "steps",
     .default_value = 0,
     .minimum = 0,
     .maximum = kMaxWholeRunCount,
     .help = "train steps between evaluations; 0: once, after training"},
    {.path = "whole_run.eval.steps",
     .kind = KeyKind::integer,
     .unit = "steps",
     .default_value = 0,
     .minimum = 0,
     .maximum = kMaxWholeRunCount,
     .help = "forward-only steps per evaluation"},
    {.path = "whole_run.eval.batch",
     .kind = KeyKind::integer,
     .unit = "samples",
     .default_note = "training.global_batch",
     .minimum = 1,
     .maximum = kMaxWholeRunCount,
     .help = "samples per evaluation step"},
    {.path = "whole_run.eval.last_batch",
     .kind = KeyKind::integer,
     .unit = "samples",
     .default_value = 0,
     .minimum = 0,
     .maximum = kMaxWholeRunCount,
     .help = "samples in the last, partial batch of an evaluation; 0: none"},
    {.path = "whole_run.eval.accumulate",
     .kind = KeyKind::choice,
     .choices = kAccumulateNames,
     .default_string = "none",
     .help = "where per-step results are gathered: device (a tensor that grows every step: a new program "
             "every step), host (device-to-host transfers every step)"},
    {.path = "whole_run.eval.accumulated_tensors",
     .kind = KeyKind::integer,
     .unit = "tensors",
     .default_value = 1,
     .minimum = 1,
     .maximum = kMaxWholeRunCount,
     .help = "tensors accumulated per step (fields of the result)"},
    {.path = "whole_run.eval.bytes_per_sample",
     .kind = KeyKind::quantity,
     .dimension = core::Dimension::bytes,
     .default_value = 4,
     .minimum = 0,
     .help = "bytes per sample of each accumulated tensor"},
    {.path = "whole_run.unlowered_ops",
     .kind = KeyKind::integer,
     .unit = "ops",
     .default_value = 0,
     .minimum = 0,
     .maximum = kMaxUnloweredOps,
     .help =
         "ops without an XLA lowering per step: the graph is split around each, with a transfer each way"},
    {.path = "whole_run.unlowered_bytes",
     .kind = KeyKind::quantity,
     .dimension = core::Dimension::bytes,
     .default_value = 4096,
     .minimum = 0,
     .help = "bytes each of them moves to the host and back"},
    {.path = "whole_run.input",
     .kind = KeyKind::mapping,
     .default_note = "{}",
     .help = "the input pipeline (a background loader)"},
    {.path = "whole_run.input.host_time",
     .kind = KeyKind::quantity,
     .dimension = core::Dimension::time,
     .default_value = 0,
     .minimum = 0,
     .help = "host time to prepare one batch"},
    {.path = "whole_run.input.bytes",
     .kind = KeyKind::quantity,
     .dimension = core::Dimension::bytes,
     .default_note = "4 B per token (image: 4 B per pixel and channel)",
     .minimum = 0,
     .help = "host-to-device bytes per batch"},
    {.path = "whole_run.compile_cache",
     .kind = KeyKind::choice,
     .choices = kCompileCacheNames,
     .default_string = "process",
     .help = "process: every distinct program compiles once per process; persistent: loaded from a cache"},
    {.path = "whole_run.overlap",
     .kind = KeyKind::choice,
     .choices = kOverlapNames,
     .default_note = "run_post_order_and_fetch (PyTorch/XLA only)",
     .help = "PyTorch/XLA host work overlapping the previous execution: none (before pytorch/xla PR 3457), "
             "RunPostOrder (PR 3457), RunPostOrder and FetchTensorData (the FetchTensorData PR; current "
             "releases)"},
    {.path = "whole_run.steady_window",
     .kind = KeyKind::integer,
     .unit = "steps",
     .default_value = 100,
     .minimum = 1,
     .maximum = kMaxWholeRunCount,
     .help = "last steps averaged for the steady-state figures"},
    {.path = "whole_run.seed",
     .kind = KeyKind::integer,
     .default_value = 1,
     .minimum = 0,
     .help = "seed of the sequence-length draws"},
};

consteval const core::Key& whole_run_key(std::string_view path) {
    return core::find_key(kWholeRunKeys, path);
}

}  // namespace podsim::config
