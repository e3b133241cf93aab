#include "config/whole_run_block.hpp"

#include <fmt/format.h>

#include "config/yaml_reader.hpp"

namespace podsim::config::detail {

const std::vector<KeyDoc>& whole_run_keys() {
    static const std::vector<KeyDoc> keys = {
        {"whole_run", "mapping", "(none: one step)",
         "a run of many steps: host work, compile cache, transfers (podsim run prints the whole run)"},
        {"whole_run.train_steps", "int", "0", "training steps (forward, backward, optimizer)"},
        {"whole_run.log_every", "int", "0 (never)",
         "a host sync every k train steps (loss.item()): waits for the step, one device-to-host transfer"},
        {"whole_run.last_batch", "int", "0 (none)", "samples in a last, partial training batch: a new shape"},
        {"whole_run.seq_len", "mapping", "{distribution: fixed}", "the sequence length of each batch"},
        {"whole_run.seq_len.distribution", "enum fixed|uniform|normal|buckets", "fixed",
         "fixed: training.seq_len; uniform or normal: per sample, clipped to [min, max], the batch takes its "
         "longest; buckets: one of `buckets` per batch with `weights`"},
        {"whole_run.seq_len.min", "int", "(required for uniform, normal)", "shortest sample, tokens"},
        {"whole_run.seq_len.max", "int", "(required for uniform, normal)", "longest sample, tokens"},
        {"whole_run.seq_len.mean", "number", "(required for normal)", "mean sample length, tokens"},
        {"whole_run.seq_len.stddev", "number", "(required for normal)", "standard deviation, tokens"},
        {"whole_run.seq_len.buckets", "list of int", "",
         "lengths batches are padded up to (padding: bucket), or drawn from (distribution: buckets)"},
        {"whole_run.seq_len.weights", "list of number", "equal",
         "relative frequency of each bucket (distribution: buckets)"},
        {"whole_run.seq_len.padding", "enum none|bucket|max", "none",
         "none: each batch padded to its longest sample (a new program per new length); bucket: up to the "
         "next "
         "bucket; max: always max"},
        {"whole_run.eval", "mapping", "{}", "evaluation (forward only)"},
        {"whole_run.eval.every", "int", "0 (once, after training)", "train steps between evaluations"},
        {"whole_run.eval.steps", "int", "0", "forward-only steps per evaluation"},
        {"whole_run.eval.batch", "int", "training.global_batch", "samples per evaluation step"},
        {"whole_run.eval.last_batch", "int", "0 (none)",
         "samples in the last, partial batch of an evaluation"},
        {"whole_run.eval.accumulate", "enum none|device|host", "none",
         "where per-step results are gathered: device (a tensor that grows every step: a new program every "
         "step), host (device-to-host transfers every step)"},
        {"whole_run.eval.accumulated_tensors", "int", "1",
         "tensors accumulated per step (fields of the result)"},
        {"whole_run.eval.bytes_per_sample", "size", "4 B", "bytes per sample of each accumulated tensor"},
        {"whole_run.unlowered_ops", "int", "0",
         "ops without an XLA lowering per step: the graph is split around each, with a transfer each way"},
        {"whole_run.unlowered_bytes", "size", "4 KiB", "bytes each of them moves to the host and back"},
        {"whole_run.input", "mapping", "{}", "the input pipeline (a background loader)"},
        {"whole_run.input.host_time", "time", "0 s", "host time to prepare one batch"},
        {"whole_run.input.bytes", "size", "4 B per token (image: 4 B per pixel and channel)",
         "host-to-device bytes per batch"},
        {"whole_run.compile_cache", "enum process|persistent", "process",
         "process: every distinct program compiles once per process; persistent: loaded from a cache"},
        {"whole_run.overlap", "enum none|run_post_order|run_post_order_and_fetch", "run_post_order_and_fetch",
         "PyTorch/XLA host work overlapping the previous execution: none (before pytorch/xla PR 3457), "
         "RunPostOrder (PR 3457), RunPostOrder and FetchTensorData (the PR of seed 002; current releases)"},
        {"whole_run.steady_window", "int", "100", "last steps averaged for the steady-state figures"},
        {"whole_run.seed", "int", "1", "seed of the sequence-length draws"},
    };
    return keys;
}

namespace {

std::vector<std::string> keys_of(std::string_view prefix) {
    return keys_under(whole_run_keys(), prefix);
}

std::vector<double> number_list(const MapReader& r, const std::string& key) {
    std::vector<double> out;
    if (!r.has(key)) return out;
    YAML::Node list = r.raw(key);
    if (!list.IsSequence()) {
        r.error(key, "expected a list, e.g. [128, 256, 512]");
        return out;
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
        try {
            out.push_back(list[i].as<double>());
        } catch (const YAML::Exception&) {
            r.error(key, fmt::format("item {} is not a number", i + 1));
        }
    }
    return out;
}

}  // namespace

training_run::RunPlan parse_whole_run(const YAML::Node& node, const std::string& file,
                                      const std::string& path, const run::RunSpec& spec,
                                      core::Diagnostics& d) {
    using core::Dimension;
    training_run::RunPlan plan;
    MapReader r(node, file, path, d, keys_of("whole_run"));
    if (!r.ok()) return plan;
    plan.train_steps = static_cast<int>(r.integer("train_steps", false, 0).value_or(0));
    plan.log_every = static_cast<int>(r.integer("log_every", false, 0).value_or(0));
    plan.last_batch = static_cast<int>(r.integer("last_batch", false, 0).value_or(0));
    plan.unlowered_ops = static_cast<int>(r.integer("unlowered_ops", false, 0).value_or(0));
    plan.unlowered_bytes = r.quantity("unlowered_bytes", Dimension::bytes, false).value_or(4096.0);
    plan.steady_window = static_cast<int>(r.integer("steady_window", false, 1).value_or(100));
    plan.seed = static_cast<std::uint64_t>(r.integer("seed", false, 0).value_or(1));
    if (auto c = r.choice("compile_cache", {"process", "persistent"}, false))
        plan.cache = static_cast<training_run::CompileCache>(*c);
    if (auto o = r.choice("overlap", {"none", "run_post_order", "run_post_order_and_fetch"}, false)) {
        plan.overlap = static_cast<training_run::Overlap>(*o);
        if (spec.runtime.framework != parallel::Framework::pytorch_xla)
            r.error("overlap", "is a PyTorch/XLA setting; runtime.framework is jax");
    }
    if (plan.last_batch > 0 && plan.last_batch >= spec.training.global_batch)
        r.error("last_batch", fmt::format("must be smaller than the batch ({})", spec.training.global_batch));

    if (r.has("seq_len")) {
        MapReader s(r.raw("seq_len"), file, r.path_of("seq_len"), d, keys_of("whole_run.seq_len"));
        auto& l = plan.lengths;
        if (auto dist = s.choice("distribution", {"fixed", "uniform", "normal", "buckets"}, false))
            l.distribution = static_cast<training_run::LengthDistribution>(*dist);
        if (auto p = s.choice("padding", {"none", "bucket", "max"}, false))
            l.padding = static_cast<training_run::Padding>(*p);
        const bool ranged = l.distribution == training_run::LengthDistribution::uniform ||
                            l.distribution == training_run::LengthDistribution::normal;
        l.min = static_cast<int>(s.integer("min", ranged, 1).value_or(0));
        l.max = static_cast<int>(
            s.integer("max", ranged || l.padding == training_run::Padding::max, 1).value_or(0));
        const bool normal = l.distribution == training_run::LengthDistribution::normal;
        l.mean = s.number("mean", normal).value_or(0.0);
        l.stddev = s.number("stddev", normal).value_or(0.0);
        for (double b : number_list(s, "buckets")) l.buckets.push_back(static_cast<int>(b));
        l.weights = number_list(s, "weights");
        const bool uses_buckets = l.distribution == training_run::LengthDistribution::buckets ||
                                  l.padding == training_run::Padding::bucket;
        if (uses_buckets && l.buckets.empty())
            s.error("buckets", "missing: the distribution or padding needs them");
        for (std::size_t i = 1; i < l.buckets.size(); ++i) {
            if (l.buckets[i] <= l.buckets[i - 1]) s.error("buckets", "must increase");
        }
        if (l.distribution == training_run::LengthDistribution::buckets) {
            if (l.weights.empty()) l.weights.assign(l.buckets.size(), 1.0);
            if (l.weights.size() != l.buckets.size())
                s.error("weights",
                        fmt::format("{} weights for {} buckets", l.weights.size(), l.buckets.size()));
        }
        if (ranged && l.max < l.min) s.error("max", fmt::format("{} is below min ({})", l.max, l.min));
        if (normal && l.stddev < 0) s.error("stddev", "must not be negative");
        int longest = l.max;
        for (int b : l.buckets) longest = std::max(longest, b);
        if (spec.model.is_vit() && l.distribution != training_run::LengthDistribution::fixed)
            s.error("distribution", "a ViT's sequence is its patches: only fixed applies");
        if (!spec.model.is_vit() && spec.model.position == workload::PositionEmbedding::learned &&
            longest > spec.model.max_positions)
            s.error("max", fmt::format("{} exceeds the model's max_positions ({})", longest,
                                       spec.model.max_positions));
        if (l.padding == training_run::Padding::bucket && ranged && !l.buckets.empty() &&
            l.buckets.back() < l.max)
            s.error("buckets",
                    fmt::format("the last bucket ({}) must hold max ({})", l.buckets.back(), l.max));
    }
    if (r.has("eval")) {
        MapReader e(r.raw("eval"), file, r.path_of("eval"), d, keys_of("whole_run.eval"));
        auto& ev = plan.eval;
        ev.every = static_cast<int>(e.integer("every", false, 0).value_or(0));
        ev.steps = static_cast<int>(e.integer("steps", false, 0).value_or(0));
        ev.batch = static_cast<int>(e.integer("batch", false, 1).value_or(0));
        ev.last_batch = static_cast<int>(e.integer("last_batch", false, 0).value_or(0));
        if (auto a = e.choice("accumulate", {"none", "device", "host"}, false))
            ev.accumulate = static_cast<training_run::Accumulate>(*a);
        ev.accumulated_tensors = static_cast<int>(e.integer("accumulated_tensors", false, 1).value_or(1));
        ev.accumulated_bytes_per_sample =
            e.quantity("bytes_per_sample", Dimension::bytes, false).value_or(4.0);
        const long batch = ev.batch > 0 ? ev.batch : spec.training.global_batch;
        if (ev.last_batch > 0 && ev.last_batch >= batch)
            e.error("last_batch", fmt::format("must be smaller than the evaluation batch ({})", batch));
    }
    if (r.has("input")) {
        MapReader in(r.raw("input"), file, r.path_of("input"), d, keys_of("whole_run.input"));
        plan.input_host_time = in.quantity("host_time", Dimension::time, false).value_or(0.0);
        plan.input_bytes = in.quantity("bytes", Dimension::bytes, false);
    }
    if (plan.train_steps == 0 && plan.eval.steps == 0)
        r.error("train_steps", "a whole run needs train_steps or eval.steps");
    return plan;
}

}  // namespace podsim::config::detail
