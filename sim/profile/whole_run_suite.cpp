#include "profile/whole_run_suite.hpp"

#include <algorithm>
#include <cmath>

#include "training_run/whole_run.hpp"

namespace podsim::profile {
namespace {

constexpr std::string_view kGainPrefix = "throughput_gain_vs_";

double counted_per_step(const training_run::WholeRun& w, const config::ValidationCase& c, bool compiles) {
    if (w.total_steps() == 0) return 0.0;
    auto it = c.measured.find("steps");
    long steps = it != c.measured.end() ? static_cast<long>(it->second) : w.total_steps();
    steps = std::clamp(steps, 1L, w.total_steps());
    const auto at = w.counts_at(steps - 1);
    return static_cast<double>(compiles ? at.compiles : at.from_device) / static_cast<double>(steps);
}

}  // namespace

std::optional<double> whole_run_quantity(const training_run::WholeRun& w, std::string_view name) {
    const double steps = static_cast<double>(std::max(1L, w.total_steps()));
    if (name == "run_time_s") return w.run_time_s;
    if (name == "steady_train_step_s") return w.steady_train_step_s;
    if (name == "steady_eval_step_s") return w.steady_eval_step_s;
    if (name == "steady_gap_s") return w.steady_gap_s;
    if (name == "mean_step_s") return w.run_time_s / steps;
    if (name.rfind("mean:", 0) == 0 || name == "time_without_device_s") {
        auto metric = [&](const std::string& m) {
            auto it = w.metrics.find(m);
            return it == w.metrics.end() ? training_run::Metric{} : it->second;
        };
        if (name == "time_without_device_s") return (w.run_time_s - metric("ExecuteTime").total_s) / steps;
        const auto m = metric(std::string(name.substr(5)));
        return m.count > 0 ? m.total_s / static_cast<double>(m.count) : 0.0;
    }
    return std::nullopt;
}

bool is_whole_run_parameter(std::string_view name) {
    for (std::string_view p :
         {"trace_per_op_pytorch_xla", "hash_per_op_pytorch_xla", "post_order_per_op_pytorch_xla",
          "fetch_per_tensor_pytorch_xla", "launch_per_execution_pytorch_xla", "trace_per_op_jax",
          "dispatch_per_executable_jax", "dispatch_per_argument_jax", "transfer_latency", "transfer_per_mib",
          "cache_load_per_op", "cpu_op_time", "compile_time_base", "compile_time_per_op", "host_overhead_jax",
          "host_overhead_pytorch_xla"}) {
        if (p == name) return true;
    }
    return false;
}

std::vector<Target> whole_run_targets(const config::ValidationCase& c) {
    std::vector<Target> targets;
    for (const auto& [name, measured] : c.measured) {
        if (!c.tolerance.count(name + "_rel") && !c.tolerance.count(name + "_abs")) continue;
        if (name == "run_time_s" || name == "steady_train_step_s" || name == "steady_eval_step_s" ||
            name == "steady_gap_s")
            targets.push_back({Target::Kind::whole_run, name, measured});
    }
    return targets;
}

std::vector<CaseResult> evaluate_whole_run_case(const config::ValidationCase& c) {
    const training_run::WholeRun w = training_run::simulate_whole_run(c.run, *c.run.whole_run);
    std::vector<CaseResult> results;
    for (const auto& [name, measured] : c.measured) {
        const auto rel = c.tolerance.find(name + "_rel"), abs = c.tolerance.find(name + "_abs");
        if (rel == c.tolerance.end() && abs == c.tolerance.end()) continue;  // context, not judged
        double predicted = 0.0;
        if (auto q = whole_run_quantity(w, name)) {
            predicted = *q;
        } else if (name == "compiles_per_step") {
            predicted = counted_per_step(w, c, true);
        } else if (name == "transfers_from_device_per_step") {
            predicted = counted_per_step(w, c, false);
        } else if (name.rfind(kGainPrefix, 0) == 0) {
            auto overlap = config::parse_overlap(std::string_view(name).substr(kGainPrefix.size()));
            if (!overlap) continue;
            auto plan = *c.run.whole_run;
            plan.overlap = *overlap;
            const auto base = training_run::simulate_whole_run(c.run, plan);
            const double step = w.train_steps > 0 ? w.steady_train_step_s : w.steady_eval_step_s;
            const double base_step = w.train_steps > 0 ? base.steady_train_step_s : base.steady_eval_step_s;
            predicted = base_step / step - 1.0;
        } else {
            continue;
        }
        CaseResult r;
        r.id = c.id;
        r.source = c.source;
        r.derived = c.derived;
        r.metric = name;
        r.predicted = predicted;
        r.measured = measured;
        r.expected_miss = c.expected_miss.value_or("");
        r.relative = rel != c.tolerance.end();
        r.tolerance = r.relative ? rel->second : abs->second;
        r.error = r.relative ? (predicted - measured) / measured : predicted - measured;
        const bool within = std::fabs(r.error) <= r.tolerance;
        if (within) {
            r.status = c.expected_miss ? CaseStatus::unexpected_pass : CaseStatus::pass;
        } else {
            r.status = c.expected_miss ? CaseStatus::expected_miss : CaseStatus::fail;
        }
        results.push_back(std::move(r));
    }
    if (results.empty()) {
        CaseResult r;
        r.id = c.id;
        r.source = c.source;
        r.metric = "(no measured whole-run quantity with a tolerance)";
        r.status = CaseStatus::fail;
        results.push_back(std::move(r));
    }
    return results;
}

}  // namespace podsim::profile
