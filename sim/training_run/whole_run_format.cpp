#include "training_run/whole_run_format.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/quantity.hpp"

namespace podsim::training_run {
namespace {

using core::format_seconds;

// "01m02s234ms567.890us", the duration layout of metrics_report().
std::string metrics_duration(double seconds) {
    const auto total_us = static_cast<long long>(std::llround(seconds * 1e6 * 1000.0));  // ns
    long long ns = total_us;
    const long long minutes = ns / 60'000'000'000LL;
    ns -= minutes * 60'000'000'000LL;
    const long long secs = ns / 1'000'000'000LL;
    ns -= secs * 1'000'000'000LL;
    const long long ms = ns / 1'000'000LL;
    ns -= ms * 1'000'000LL;
    const double us = static_cast<double>(ns) / 1000.0;
    std::string out;
    if (minutes > 0) out += fmt::format("{:02d}m", minutes);
    if (minutes > 0 || secs > 0) out += fmt::format("{:02d}s", secs);
    out += fmt::format("{:03d}ms{:07.3f}us", ms, us);
    return out;
}

constexpr const char* kMetricOrder[] = {"CompileTime", "ExecuteTime", "TransferToServerTime",
                                        "TransferFromServerTime"};

}  // namespace

std::string format_whole_run(const WholeRun& w) {
    std::string out = fmt::format("podsim whole run: {}\n  {}, host model: {}{}\n\n", w.name, w.framework,
                                  w.host_model, w.overlap.empty() ? "" : ", overlap: " + w.overlap);
    auto line = [&](const std::string& label, const std::string& value) {
        out += fmt::format("  {:<30} {}\n", label, value);
    };
    line("run time", fmt::format("{}  ({} train + {} eval steps)", format_seconds(w.run_time_s),
                                 w.train_steps, w.eval_steps));
    if (w.train_steps > 0) {
        line("train", fmt::format("{}, {:.2f} steps/s over the run", format_seconds(w.train_time_s),
                                  static_cast<double>(w.train_steps) / w.train_time_s));
        line("  steady state",
             fmt::format("{} per step, {:.2f} steps/s (last {} steps)", format_seconds(w.steady_train_step_s),
                         1.0 / w.steady_train_step_s, w.steady_window));
        line("  lost to warm-up", format_seconds(w.warmup_loss_s));
    }
    if (w.eval_steps > 0) {
        line("eval", fmt::format("{}, {:.2f} steps/s over the run", format_seconds(w.eval_time_s),
                                 static_cast<double>(w.eval_steps) / w.eval_time_s));
        line("  steady state", fmt::format("{} per step, {:.2f} steps/s",
                                           format_seconds(w.steady_eval_step_s), 1.0 / w.steady_eval_step_s));
    }
    line("single step (podsim run)", format_seconds(w.single_step_s));
    auto metric = [&](const char* name) {
        auto it = w.metrics.find(name);
        return it == w.metrics.end() ? Metric{} : it->second;
    };
    line("compiles", fmt::format("{} programs, {} compilations, {} compiling", w.programs.size(),
                                 metric("CompileTime").count, format_seconds(metric("CompileTime").total_s)));
    line("executions", fmt::format("{}, {} on the device", metric("ExecuteTime").count,
                                   format_seconds(metric("ExecuteTime").total_s)));
    line("transfers host->device", fmt::format("{}, {}", metric("TransferToServerTime").count,
                                               format_seconds(metric("TransferToServerTime").total_s)));
    line("transfers device->host", fmt::format("{}, {}", metric("TransferFromServerTime").count,
                                               format_seconds(metric("TransferFromServerTime").total_s)));
    line("gap between executions", fmt::format("{} steady, {} mean over the run",
                                               format_seconds(w.steady_gap_s), format_seconds(w.mean_gap_s)));
    out += w.framework.starts_with("pytorch-xla")
               ? "\nPyTorch/XLA metrics (torch_xla.debug.metrics names)\n"
               : "\ncounters (under PyTorch/XLA's metric names, for comparison)\n";
    for (const char* name : kMetricOrder) {
        auto m = metric(name);
        out += fmt::format("  {:<24} {:>8} samples  {:>12}\n", name, m.count, format_seconds(m.total_s));
    }
    for (const auto& [name, value] : w.counters) out += fmt::format("  {:<24} {:>8}\n", name, value);
    if (w.debug_line_count > 0) {
        out += fmt::format("\nPT_XLA_DEBUG=1 would print ({} lines; first and last 3)\n", w.debug_line_count);
        // Those of the recorded steps, then the run's last ones where the recorded steps do not
        // reach them.
        std::vector<std::string> shown(
            w.debug_lines.begin(),
            w.debug_lines.begin() +
                std::min<std::ptrdiff_t>(3, static_cast<std::ptrdiff_t>(w.debug_lines.size())));
        const long total = w.debug_line_count;
        if (total == static_cast<long>(w.debug_lines.size())) {
            for (std::size_t i = 3; i < w.debug_lines.size(); ++i) {
                if (i + 3 >= w.debug_lines.size()) shown.push_back(w.debug_lines[i]);
            }
        } else {
            const long tail = std::min<long>(static_cast<long>(w.last_debug_lines.size()),
                                             total - static_cast<long>(shown.size()));
            shown.insert(shown.end(), w.last_debug_lines.end() - tail, w.last_debug_lines.end());
        }
        for (std::size_t i = 0; i < shown.size(); ++i) {
            if (i == 3 && total > 6) out += "  ...\n";
            out += "  " + shown[i] + "\n";
        }
    }
    return out;
}

std::string whole_run_json(const WholeRun& w) {
    nlohmann::ordered_json j;
    j["schema"] = "podsim.whole-run/v1";
    j["name"] = w.name;
    j["framework"] = w.framework;
    j["host_model"] = w.host_model;
    j["overlap"] = w.overlap;
    j["run_time_s"] = w.run_time_s;
    j["train_steps"] = w.train_steps;
    j["eval_steps"] = w.eval_steps;
    j["train_time_s"] = w.train_time_s;
    j["eval_time_s"] = w.eval_time_s;
    j["steady_train_step_s"] = w.steady_train_step_s;
    j["steady_eval_step_s"] = w.steady_eval_step_s;
    j["warmup_loss_s"] = w.warmup_loss_s;
    j["single_step_s"] = w.single_step_s;
    j["steady_gap_s"] = w.steady_gap_s;
    j["mean_gap_s"] = w.mean_gap_s;
    auto metrics = nlohmann::ordered_json::object();
    for (const auto& [name, m] : w.metrics) metrics[name] = {{"count", m.count}, {"total_s", m.total_s}};
    j["metrics"] = metrics;
    auto counters = nlohmann::ordered_json::object();
    for (const auto& [name, v] : w.counters) counters[name] = v;
    j["counters"] = counters;
    auto programs = nlohmann::ordered_json::array();
    for (const auto& p : w.programs) {
        programs.push_back({{"name", p.name},
                            {"device_s", p.device_s},
                            {"ops", p.ops},
                            {"tensors", p.tensors},
                            {"compile_s", p.compile_s}});
    }
    j["programs"] = programs;
    j["pt_xla_debug"] = w.debug_lines;
    if (w.debug_line_count > static_cast<long>(w.debug_lines.size())) {
        // A run longer than the recorded steps: their lines above, the whole run's count and last ones.
        j["pt_xla_debug_lines"] = w.debug_line_count;
        j["pt_xla_debug_last"] = w.last_debug_lines;
    }
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string metrics_report(const WholeRun& w) {
    std::string out;
    for (const char* name : kMetricOrder) {
        auto it = w.metrics.find(name);
        if (it == w.metrics.end() || it->second.count == 0) continue;
        out += fmt::format("Metric: {}\n  TotalSamples: {}\n  Accumulator: {}\n", name, it->second.count,
                           metrics_duration(it->second.total_s));
    }
    for (const auto& [name, value] : w.counters)
        out += fmt::format("Counter: {}\n  Value: {}\n", name, value);
    return out;
}

std::string whole_run_trace(const WholeRun& w) {
    auto us = [](core::Time t) { return static_cast<double>(t) / static_cast<double>(core::kMicrosecond); };
    auto events = nlohmann::json::array();
    std::string process = "podsim whole run: " + w.name;
    if (w.total_steps() > static_cast<long>(w.steps.size()))
        process += fmt::format(" (its first {} of {} steps)", w.steps.size(), w.total_steps());
    events.push_back({{"ph", "M"}, {"pid", 1}, {"name", "process_name"}, {"args", {{"name", process}}}});
    for (int t = 0; t <= kTracks; ++t) {
        const std::string name = t == kTracks ? "steps" : std::string(track_name(static_cast<Track>(t)));
        events.push_back(
            {{"ph", "M"}, {"pid", 1}, {"tid", t}, {"name", "thread_name"}, {"args", {{"name", name}}}});
    }
    for (const auto& a : w.activities) {
        nlohmann::json args = {{"step", a.step}};
        std::string cat = a.track == Track::device ? "execute" : "host";
        if (a.track == Track::to_device || a.track == Track::from_device) cat = "transfer";
        if (a.program >= 0) args["program"] = w.programs[static_cast<std::size_t>(a.program)].name;
        events.push_back({{"ph", "X"},
                          {"pid", 1},
                          {"tid", static_cast<int>(a.track)},
                          {"name", a.name},
                          {"cat", cat},
                          {"ts", us(a.start)},
                          {"dur", us(a.end - a.start)},
                          {"args", args}});
    }
    core::Time previous = 0;
    for (const auto& s : w.steps) {
        events.push_back({{"ph", "X"},
                          {"pid", 1},
                          {"tid", kTracks},
                          {"name", fmt::format("ProfilerStep#{}", s.index)},
                          {"cat", "step"},
                          {"ts", us(previous)},
                          {"dur", us(s.end - previous)},
                          {"args", {{"eval", s.eval}, {"compiled", s.compiled}, {"program", s.program}}}});
        previous = s.end;
    }
    nlohmann::json trace = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
    return trace.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace podsim::training_run
