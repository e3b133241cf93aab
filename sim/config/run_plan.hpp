#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace podsim::config {

// Which parts of PyTorch/XLA's host work between two executions overlap the previous execution,
// as the releases did: none; RunPostOrder (pytorch/xla PR 3457); RunPostOrder and FetchTensorData
// (the PR of ../shared/seeds/002_51be399233f93cc1.txt).
enum class Overlap { none, run_post_order, run_post_order_and_fetch };

// How each batch's sequence length is chosen: every batch padded to its own longest sample (a
// new shape whenever that length is new), to the next bucket, or to the maximum.
enum class Padding { none, bucket, max };

// Where per-step results (predictions, scores) are accumulated during evaluation: on the device
// (a tensor that grows every step: a new graph every step, as in seed 001), on the host (a
// device-to-host transfer per tensor per step), or not at all.
enum class Accumulate { none, device, host };

enum class CompileCache { process, persistent };

enum class LengthDistribution { fixed, uniform, normal, buckets };

// The sequence lengths of a run's batches (text models).
struct SequenceLengths {
    LengthDistribution distribution = LengthDistribution::fixed;
    int min = 0, max = 0;             // tokens; uniform and normal are clipped to [min, max]
    double mean = 0.0, stddev = 0.0;  // normal
    std::vector<int> buckets;         // padding targets (padding: bucket), or the lengths drawn
    std::vector<double> weights;      // frequencies of the buckets (distribution: buckets)
    Padding padding = Padding::none;
};

struct EvalPlan {
    int every = 0;       // train steps between evaluations; 0: once, after training
    int steps = 0;       // forward-only steps per evaluation
    int batch = 0;       // 0: the training batch
    int last_batch = 0;  // samples in a last, partial batch of each evaluation; 0: none
    Accumulate accumulate = Accumulate::none;
    int accumulated_tensors = 1;                // tensors per step (one per field of the result)
    double accumulated_bytes_per_sample = 4.0;  // per tensor
};

// A run of many steps (the `whole_run:` block of a run config). Everything the single step does
// not know: how many steps, what changes between them, what the host does around them.
struct RunPlan {
    int train_steps = 0;
    EvalPlan eval;
    int log_every = 0;  // a host sync (loss.item()) every k train steps; 0: never
    SequenceLengths lengths;
    int last_batch = 0;               // samples in a last, partial training batch; 0: none
    int unlowered_ops = 0;            // ops without an XLA lowering per step: the graph is split around each
    double unlowered_bytes = 4096.0;  // bytes each of them moves to the host and back
    double input_host_time = 0.0;     // seconds of input pipeline host work per batch (background loader)
    std::optional<double> input_bytes;  // host-to-device bytes per batch; default: the token ids
    CompileCache cache = CompileCache::process;
    std::optional<Overlap> overlap;  // PyTorch/XLA; default: both overlapped (current releases)
    int steady_window = 100;         // steps averaged for the steady-state figures
    std::uint64_t seed = 1;          // sequence-length draws
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
