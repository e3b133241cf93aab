#include "profile/measured_profile.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <map>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "profile/readers_common.hpp"

namespace podsim::profile {
namespace {

// The whole of `s` as a finite number, or nullopt (std::stod threw on "x" and "1e400").
std::optional<double> finite_number(const std::string& s) {
    double value = 0.0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(value)) return std::nullopt;
    return value;
}

// Sample counts become int step counts: above this they are not a count any run produced.
constexpr double kMaxSamples = 1e9;

}  // namespace

MeasuredProfile read_pytorch_xla_metrics(const std::string& path, const std::string& text) {
    // torch_xla.debug.metrics.metrics_report(): "Metric: NAME" blocks with TotalSamples and
    // Accumulator, "Counter: NAME" with Value.
    MeasuredProfile p;
    p.format = "pytorch-xla-metrics";
    p.file = path;
    std::istringstream in(text);
    std::string line, metric;
    std::map<std::string, double> samples, accumulated, counters;
    std::size_t line_offset = 0, next_offset = 0;
    auto parse_duration = [&](const std::string& s) {
        // "01m02s234ms567.890us", "123ms456.789us", "2.34s": sum the parts.
        double total = 0.0;
        std::size_t i = 0;
        std::string last_unit;
        bool time_units = true;  // a time metric's; others (bytes: 1.23MB) are no duration
        while (i < s.size()) {
            std::size_t j = i;
            while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '.')) ++j;
            if (j == i) break;
            auto number = finite_number(s.substr(i, j - i));
            if (!number)
                profile_error(path, line_offset, fmt::format("Accumulator '{}' is not a duration", s));
            double v = *number;
            std::size_t k = j;
            while (k < s.size() && std::isalpha(static_cast<unsigned char>(s[k]))) ++k;
            std::string unit = s.substr(j, k - j);
            if (unit == "d")
                total += v * 86400;
            else if (unit == "h")
                total += v * 3600;
            else if (unit == "m")
                total += v * 60;
            else if (unit == "s")
                total += v;
            else if (unit == "ms")
                total += v * 1e-3;
            else if (unit == "us")
                total += v * 1e-6;
            else if (unit == "ns")
                total += v * 1e-9;
            else
                time_units = false;
            last_unit = unit;
            i = k;
        }
        // torch_xla's MetricFnTime writes every part from the largest down to microseconds
        // (01m22s550ms000.000us): a duration that stops short of them was cut off.
        if (time_units && !last_unit.empty() && last_unit != "us" && last_unit != "ns")
            profile_error(path, line_offset,
                          fmt::format("Accumulator '{}' ends before its microseconds (torch_xla writes them "
                                      "all, as in 01m22s550ms000.000us): the report looks cut off",
                                      s));
        return total;
    };
    std::map<std::string, std::size_t> metric_at;  // where each Metric: block starts
    while (std::getline(in, line)) {
        line_offset = next_offset;
        next_offset += line.size() + 1;
        auto trim = [](std::string s) {
            s.erase(0, s.find_first_not_of(" \t"));
            s.erase(s.find_last_not_of(" \t\r") + 1);
            return s;
        };
        line = trim(line);
        if (line.rfind("Metric: ", 0) == 0) {
            metric = line.substr(8);
            metric_at[metric] = line_offset;
        } else if (line.rfind("Counter: ", 0) == 0) {
            metric = "counter:" + line.substr(9);
        } else if (line.rfind("TotalSamples: ", 0) == 0) {
            auto count = finite_number(line.substr(14));
            if (!count || *count < 0 || *count > kMaxSamples) {
                profile_error(
                    path, line_offset,
                    fmt::format("'{}' is not a sample count (a whole number up to {:g})", line, kMaxSamples));
            }
            samples[metric] = *count;
        } else if (line.rfind("Accumulator: ", 0) == 0) {
            accumulated[metric] = parse_duration(line.substr(13));
        } else if (line.rfind("Value: ", 0) == 0) {
            if (auto value = finite_number(line.substr(7))) counters[metric] = *value;
        }
    }
    if (!samples.count("ExecuteTime") && !samples.count("CompileTime")) {
        profile_error(path, 0, "no CompileTime or ExecuteTime metric: not a PyTorch/XLA metrics report");
    }
    // A report cut short: a metric block without its sample count or total, or compilations with no
    // execution after them (torch_xla lists its metrics by name: ExecuteTime comes after CompileTime).
    for (const auto& [name, at] : metric_at) {
        if (!samples.count(name) || !accumulated.count(name))
            profile_error(path, at,
                          fmt::format("Metric: {} has no {}: the report looks cut off", name,
                                      samples.count(name) ? "Accumulator" : "TotalSamples"));
    }
    if (samples.count("CompileTime") && samples["CompileTime"] > 0 && !samples.count("ExecuteTime"))
        profile_error(path, text.size(),
                      "CompileTime but no ExecuteTime: what compiled has run, so the report looks cut off "
                      "after CompileTime");
    double executions = samples.count("ExecuteTime") ? samples["ExecuteTime"] : 0.0;
    double compiles = samples.count("CompileTime") ? samples["CompileTime"] : 0.0;
    p.steps = executions > 0 ? static_cast<int>(executions) : 1;
    // Whole-report counts and totals, for whole-run comparisons; steps are MarkStep when counted.
    for (const auto& [name, count] : samples) {
        p.metric_counts[name] = count;
        p.metric_totals_s[name] = accumulated[name];
    }
    const int marked =
        counters.count("counter:MarkStep") ? static_cast<int>(counters["counter:MarkStep"]) : 0;
    for (const auto& [name, count] : samples) p.metric_steps[name] = marked > 0 ? marked : p.steps;
    if (executions > 0) p.step_time_s = accumulated["ExecuteTime"] / executions;
    if (compiles > 0) p.category_s["compile"] = accumulated["CompileTime"] / std::max(1.0, executions);
    if (samples.count("TransferFromServerTime") && executions > 0) {
        p.category_s["copy"] = accumulated["TransferFromServerTime"] / executions;
    }
    // PyTorch/XLA's debug mode flags a graph that recompiles: more than 0.5 compiles per step after
    // the first (warm-up) compilation.
    if (executions > 1 && (compiles - 1.0) / (executions - 1.0) > 0.5) {
        p.notes.push_back(fmt::format(
            "compiles every step: {} compilations for {} executions. A graph that changes every step "
            "(dynamic "
            "shapes, Python scalars, print of tensors) recompiles every step; that is the most common reason "
            "a "
            "measured step is slower than predicted (model it with runtime.recompile_every_step: true)",
            compiles, executions));
    }
    p.ops.push_back(
        MeasuredOp{"CompileTime", "compile", accumulated["CompileTime"], static_cast<long>(compiles), 0, 0});
    p.ops.push_back(MeasuredOp{"ExecuteTime", "execute", accumulated["ExecuteTime"],
                               static_cast<long>(executions), 0, 0});
    return p;
}

}  // namespace podsim::profile
