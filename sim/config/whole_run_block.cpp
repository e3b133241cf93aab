#include "config/whole_run_block.hpp"

#include <fmt/format.h>

#include "config/yaml_reader.hpp"

namespace podsim::config::detail {

namespace {

std::vector<std::string> keys_of(std::string_view prefix) {
    return keys_under(run_schema(), prefix);
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

RunPlan parse_whole_run(const YAML::Node& node, const std::string& file, const std::string& path,
                        const RunSpec& spec, core::Diagnostics& d) {
    using core::Dimension;
    RunPlan plan;
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
        plan.cache = static_cast<CompileCache>(*c);
    if (auto o = r.choice("overlap", {"none", "run_post_order", "run_post_order_and_fetch"}, false)) {
        plan.overlap = static_cast<Overlap>(*o);
        if (!parallel::is_pytorch_xla(spec.runtime.framework))
            r.error("overlap", "is a PyTorch/XLA setting; runtime.framework is jax");
    }
    if (plan.last_batch > 0 && plan.last_batch >= spec.training.global_batch)
        r.error("last_batch", fmt::format("must be smaller than the batch ({})", spec.training.global_batch));

    if (r.has("seq_len")) {
        MapReader s(r.raw("seq_len"), file, r.path_of("seq_len"), d, keys_of("whole_run.seq_len"));
        auto& l = plan.lengths;
        if (auto dist = s.choice("distribution", {"fixed", "uniform", "normal", "buckets"}, false))
            l.distribution = static_cast<LengthDistribution>(*dist);
        if (auto p = s.choice("padding", {"none", "bucket", "max"}, false))
            l.padding = static_cast<Padding>(*p);
        const bool ranged =
            l.distribution == LengthDistribution::uniform || l.distribution == LengthDistribution::normal;
        l.min = static_cast<int>(s.integer("min", ranged, 1).value_or(0));
        l.max = static_cast<int>(s.integer("max", ranged || l.padding == Padding::max, 1).value_or(0));
        const bool normal = l.distribution == LengthDistribution::normal;
        l.mean = s.number("mean", normal).value_or(0.0);
        l.stddev = s.number("stddev", normal).value_or(0.0);
        for (double b : number_list(s, "buckets")) l.buckets.push_back(static_cast<int>(b));
        l.weights = number_list(s, "weights");
        const bool uses_buckets =
            l.distribution == LengthDistribution::buckets || l.padding == Padding::bucket;
        if (uses_buckets && l.buckets.empty())
            s.error("buckets", "missing: the distribution or padding needs them");
        for (std::size_t i = 1; i < l.buckets.size(); ++i) {
            if (l.buckets[i] <= l.buckets[i - 1]) s.error("buckets", "must increase");
        }
        if (l.distribution == LengthDistribution::buckets) {
            if (l.weights.empty()) l.weights.assign(l.buckets.size(), 1.0);
            if (l.weights.size() != l.buckets.size())
                s.error("weights",
                        fmt::format("{} weights for {} buckets", l.weights.size(), l.buckets.size()));
        }
        if (ranged && l.max < l.min) s.error("max", fmt::format("{} is below min ({})", l.max, l.min));
        if (normal && l.stddev < 0) s.error("stddev", "must not be negative");
        int longest = l.max;
        for (int b : l.buckets) longest = std::max(longest, b);
        if (spec.model.is_vit() && l.distribution != LengthDistribution::fixed)
            s.error("distribution", "a ViT's sequence is its patches: only fixed applies");
        if (!spec.model.is_vit() && spec.model.position == workload::PositionEmbedding::learned &&
            longest > spec.model.max_positions)
            s.error("max", fmt::format("{} exceeds the model's max_positions ({})", longest,
                                       spec.model.max_positions));
        if (l.padding == Padding::bucket && ranged && !l.buckets.empty() && l.buckets.back() < l.max)
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
            ev.accumulate = static_cast<Accumulate>(*a);
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
