#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/whole_run_keys.hpp"
#include "core/diagnostics.hpp"

namespace podsim::config {

// Enums in the order of their name tables (whole_run_keys.hpp).

// Which parts of PyTorch/XLA's host work between two executions overlap the previous execution,
// as the releases did: none; RunPostOrder (pytorch/xla PR 3457); RunPostOrder and FetchTensorData
// (the later PyTorch/XLA pull request that pre-creates FetchTensorData's placeholders).
enum class Overlap { none, run_post_order, run_post_order_and_fetch };

// How each batch's sequence length is chosen: every batch padded to its own longest sample (a
// new shape whenever that length is new), to the next bucket, or to the maximum.
enum class Padding { none, bucket, max };

// Where per-step results (predictions, scores) are accumulated during evaluation: on the device
// (a tensor that grows every step: a new graph every step, as in mmf's UniT evaluation), on the host (a
// device-to-host transfer per tensor per step), or not at all.
enum class Accumulate { none, device, host };

enum class CompileCache { process, persistent };

enum class LengthDistribution { fixed, uniform, normal, buckets };

static_assert(kOverlapNames.size() == static_cast<std::size_t>(Overlap::run_post_order_and_fetch) + 1);
static_assert(kPaddingNames.size() == static_cast<std::size_t>(Padding::max) + 1);
static_assert(kAccumulateNames.size() == static_cast<std::size_t>(Accumulate::host) + 1);
static_assert(kCompileCacheNames.size() == static_cast<std::size_t>(CompileCache::persistent) + 1);
static_assert(kDistributionNames.size() == static_cast<std::size_t>(LengthDistribution::buckets) + 1);

// A count key's declared default, as the int the plan holds (its bounds keep it in range).
consteval int whole_run_count(std::string_view path) {
    return static_cast<int>(whole_run_key(path).integer_default());
}

// The sequence lengths of a run's batches (text models).
struct SequenceLengths {
    LengthDistribution distribution =
        whole_run_key("whole_run.seq_len.distribution").choice_default<LengthDistribution>();
    int min = 0, max = 0;             // tokens; uniform and normal are clipped to [min, max]
    double mean = 0.0, stddev = 0.0;  // normal
    std::vector<int> buckets;         // padding targets (padding: bucket), or the lengths drawn
    std::vector<double> weights;      // frequencies of the buckets (distribution: buckets)
    Padding padding = whole_run_key("whole_run.seq_len.padding").choice_default<Padding>();

    bool operator==(const SequenceLengths&) const = default;
};

// Defaults from the declarations (whole_run_keys.hpp).
struct EvalPlan {
    int every =
        whole_run_count("whole_run.eval.every");  // train steps between evaluations; 0: once, after training
    int steps = whole_run_count("whole_run.eval.steps");  // forward-only steps per evaluation
    int batch = 0;  // 0: the training batch (the key has no constant default)
    int last_batch =
        whole_run_count("whole_run.eval.last_batch");  // samples in a last, partial batch; 0: none
    Accumulate accumulate = whole_run_key("whole_run.eval.accumulate").choice_default<Accumulate>();
    int accumulated_tensors =
        whole_run_count("whole_run.eval.accumulated_tensors");  // one per field of the result
    double accumulated_bytes_per_sample = whole_run_key("whole_run.eval.bytes_per_sample").default_value;

    bool operator==(const EvalPlan&) const = default;
};

// A run of many steps (the `whole_run:` block of a run config). Everything the single step does
// not know: how many steps, what changes between them, what the host does around them.
struct RunPlan {
    int train_steps = whole_run_count("whole_run.train_steps");
    EvalPlan eval;
    int log_every =
        whole_run_count("whole_run.log_every");  // a host sync (loss.item()) every k train steps; 0: never
    SequenceLengths lengths;
    int last_batch = whole_run_count("whole_run.last_batch");  // samples in a last, partial training batch
    int unlowered_ops = whole_run_count("whole_run.unlowered_ops");  // ops without an XLA lowering per step
    double unlowered_bytes = whole_run_key("whole_run.unlowered_bytes").default_value;  // each, both ways
    double input_host_time = whole_run_key("whole_run.input.host_time").default_value;  // s per batch
    std::optional<double> input_bytes;  // host-to-device bytes per batch; default: the token ids
    CompileCache cache = whole_run_key("whole_run.compile_cache").choice_default<CompileCache>();
    std::optional<Overlap> overlap;  // PyTorch/XLA; default: both overlapped (current releases)
    int steady_window =
        whole_run_count("whole_run.steady_window");  // steps averaged for the steady-state figures
    std::uint64_t seed = static_cast<std::uint64_t>(whole_run_key("whole_run.seed").integer_default());
    // Where the whole_run: block is, for messages about the run; not part of what the plan is
    // (the same plan from two files compares equal).
    struct Where {
        core::SourceLocation at;
        bool operator==(const Where&) const { return true; }
    } location;

    bool operator==(const RunPlan&) const = default;
};

std::string_view overlap_name(Overlap overlap);
std::optional<Overlap> parse_overlap(std::string_view text);
std::string_view padding_name(Padding padding);
std::optional<Padding> parse_padding(std::string_view text);
std::string_view accumulate_name(Accumulate accumulate);
std::optional<Accumulate> parse_accumulate(std::string_view text);
std::string_view compile_cache_name(CompileCache cache);
std::optional<CompileCache> parse_compile_cache(std::string_view text);
std::string_view distribution_name(LengthDistribution distribution);
std::optional<LengthDistribution> parse_distribution(std::string_view text);

}  // namespace podsim::config
