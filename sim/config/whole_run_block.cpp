#include "config/whole_run_block.hpp"

#include <cmath>

#include <fmt/format.h>

#include "config/whole_run_keys.hpp"
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
    RunPlan plan;  // its members start at the declared defaults (whole_run_keys.hpp)
    plan.location.at = location_of(node, file);
    MapReader r(node, file, path, d, keys_of("whole_run"));
    if (!r.ok()) return plan;
    // Each key as declared: its default when absent, its bounds checked; a wrong value leaves the
    // default (the mistake is recorded).
    auto count = [](const MapReader& m, const core::Key& key, int& member,
                    std::optional<bool> required = {}) {
        if (auto v = m.integer(key, required)) member = static_cast<int>(*v);
    };
    auto amount = [](const MapReader& m, const core::Key& key, double& member) {
        if (auto v = m.quantity(key)) member = *v;
    };
    count(r, whole_run_key("whole_run.train_steps"), plan.train_steps);
    count(r, whole_run_key("whole_run.log_every"), plan.log_every);
    count(r, whole_run_key("whole_run.last_batch"), plan.last_batch);
    count(r, whole_run_key("whole_run.unlowered_ops"), plan.unlowered_ops);
    amount(r, whole_run_key("whole_run.unlowered_bytes"), plan.unlowered_bytes);
    count(r, whole_run_key("whole_run.steady_window"), plan.steady_window);
    if (auto seed = r.integer(whole_run_key("whole_run.seed"))) plan.seed = static_cast<std::uint64_t>(*seed);
    if (auto c = r.choice(whole_run_key("whole_run.compile_cache")))
        plan.cache = static_cast<CompileCache>(*c);
    if (auto o = r.choice(whole_run_key("whole_run.overlap"))) {
        plan.overlap = static_cast<Overlap>(*o);
        if (!parallel::is_pytorch_xla(spec.runtime.framework))
            r.error("overlap", "is a PyTorch/XLA setting; runtime.framework is jax");
    }
    if (plan.last_batch > 0 && plan.last_batch >= spec.training.global_batch)
        r.error("last_batch", fmt::format("must be smaller than the batch ({})", spec.training.global_batch));

    if (r.has("seq_len")) {
        MapReader s(r.raw("seq_len"), file, r.path_of("seq_len"), d, keys_of("whole_run.seq_len"));
        auto& l = plan.lengths;
        if (auto dist = s.choice(whole_run_key("whole_run.seq_len.distribution")))
            l.distribution = static_cast<LengthDistribution>(*dist);
        if (auto p = s.choice(whole_run_key("whole_run.seq_len.padding")))
            l.padding = static_cast<Padding>(*p);
        const bool ranged =
            l.distribution == LengthDistribution::uniform || l.distribution == LengthDistribution::normal;
        count(s, whole_run_key("whole_run.seq_len.min"), l.min, ranged);
        count(s, whole_run_key("whole_run.seq_len.max"), l.max, ranged || l.padding == Padding::max);
        const bool normal = l.distribution == LengthDistribution::normal;
        if (auto mean = s.number(whole_run_key("whole_run.seq_len.mean"), normal)) l.mean = *mean;
        if (auto stddev = s.number(whole_run_key("whole_run.seq_len.stddev"), normal)) l.stddev = *stddev;
        for (double b : number_list(s, "buckets")) l.buckets.push_back(static_cast<int>(b));
        l.weights = number_list(s, "weights");
        // Relative frequencies: a NaN, negative or infinite weight, or all zero, has no meaning.
        double weight_sum = 0.0;
        bool weights_ok = true;
        for (std::size_t i = 0; i < l.weights.size(); ++i) {
            if (!std::isfinite(l.weights[i]) || l.weights[i] < 0) {
                s.error("weights", fmt::format("item {} ({}) is not a finite, non-negative weight", i + 1,
                                               l.weights[i]));
                weights_ok = false;
            }
            weight_sum += l.weights[i];
        }
        if (weights_ok && !l.weights.empty() && !(weight_sum > 0 && std::isfinite(weight_sum)))
            s.error("weights", "their sum must be positive and finite");
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
        count(e, whole_run_key("whole_run.eval.every"), ev.every);
        count(e, whole_run_key("whole_run.eval.steps"), ev.steps);
        count(e, whole_run_key("whole_run.eval.batch"), ev.batch);
        count(e, whole_run_key("whole_run.eval.last_batch"), ev.last_batch);
        if (auto a = e.choice(whole_run_key("whole_run.eval.accumulate")))
            ev.accumulate = static_cast<Accumulate>(*a);
        count(e, whole_run_key("whole_run.eval.accumulated_tensors"), ev.accumulated_tensors);
        amount(e, whole_run_key("whole_run.eval.bytes_per_sample"), ev.accumulated_bytes_per_sample);
        const long batch = ev.batch > 0 ? ev.batch : spec.training.global_batch;
        if (ev.last_batch > 0 && ev.last_batch >= batch)
            e.error("last_batch", fmt::format("must be smaller than the evaluation batch ({})", batch));
        // Results accumulated on the device make every evaluation step a program of its own.
        const double programs = static_cast<double>(ev.steps) * (plan.unlowered_ops + 1.0);
        if (ev.accumulate == Accumulate::device && programs > static_cast<double>(kMaxWholeRunPrograms))
            e.error("steps",
                    fmt::format("with accumulate: device each of the {} steps is a new program{}: more "
                                "than the {} distinct programs a whole run may have",
                                ev.steps,
                                plan.unlowered_ops > 0 ? fmt::format(" of {} parts", plan.unlowered_ops + 1)
                                                       : std::string(),
                                kMaxWholeRunPrograms));
    }
    if (r.has("input")) {
        MapReader in(r.raw("input"), file, r.path_of("input"), d, keys_of("whole_run.input"));
        amount(in, whole_run_key("whole_run.input.host_time"), plan.input_host_time);
        plan.input_bytes = in.quantity(whole_run_key("whole_run.input.bytes"));
    }
    if (plan.train_steps == 0 && plan.eval.steps == 0)
        r.error("train_steps", "a whole run needs train_steps or eval.steps");
    return plan;
}

}  // namespace podsim::config::detail
