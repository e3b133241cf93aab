#include "profile/whole_run_compare.hpp"

#include <algorithm>
#include <optional>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/quantity.hpp"

namespace podsim::profile {
namespace {

void add_row(WholeRunComparison& c, std::string quantity, std::string unit, double predicted,
             double measured) {
    WholeRunRow row{std::move(quantity), std::move(unit), predicted, measured, 0.0};
    if (measured > 0) row.error = (predicted - measured) / measured;
    c.rows.push_back(std::move(row));
}

// Counts at the predicted step closest to `steps` (the run may be shorter than the measured one).
std::optional<training_run::StepCounts> step_at(const training_run::WholeRun& w, long steps) {
    if (w.total_steps() == 0 || steps <= 0) return std::nullopt;
    return w.counts_at(std::min(steps, w.total_steps()) - 1);
}

}  // namespace

WholeRunComparison compare_whole_run(const training_run::WholeRun& w, const MeasuredProfile& m) {
    WholeRunComparison c;
    c.name = w.name;
    c.profile = m.file;
    c.format = m.format;
    c.steps = m.steps;
    c.notes = m.notes;
    auto metric = [&](const char* name) {
        auto it = w.metrics.find(name);
        return it == w.metrics.end() ? training_run::Metric{} : it->second;
    };
    if (m.format == "pt-xla-debug" || m.format == "pytorch-xla-metrics") {
        // Counts per step, at the step the measurement reached.
        for (const auto& [name, count] : m.metric_counts) {
            if (name == "MarkStep") continue;
            auto steps_it = m.metric_steps.find(name);
            const int steps = steps_it != m.metric_steps.end() ? steps_it->second : m.steps;
            const auto at = step_at(w, steps);
            if (!at || steps <= 0) continue;
            double predicted = 0.0;
            if (name == "CompileTime")
                predicted = static_cast<double>(at->compiles);
            else if (name == "TransferFromServerTime")
                predicted = static_cast<double>(at->from_device);
            else if (name == "ExecuteTime" || name == "TransferToServerTime")
                predicted = static_cast<double>(metric(name.c_str()).count) *
                            static_cast<double>(at->index + 1) / static_cast<double>(w.total_steps());
            else
                continue;
            const double predicted_steps = static_cast<double>(at->index + 1);
            add_row(c, name + " count", fmt::format("per step (over {} steps)", steps),
                    predicted / predicted_steps, count / steps);
            if (m.format == "pt-xla-debug") {
                for (const auto& line : w.debug_lines_at(at->index)) {
                    if (line.find(" " + name + " too frequent") != std::string::npos)
                        c.predicted_debug.push_back(line);
                }
            }
        }
        for (const auto& [name, total] : m.metric_totals_s) {
            auto count_it = m.metric_counts.find(name);
            if (count_it == m.metric_counts.end() || count_it->second <= 0) continue;
            const auto p = metric(name.c_str());
            if (p.count == 0) {
                add_row(c, name + " mean", "s per sample", 0.0, total / count_it->second);
                continue;
            }
            add_row(c, name + " mean", "s per sample", p.total_s / static_cast<double>(p.count),
                    total / count_it->second);
        }
    } else {
        // A trace: its steps' mean duration and the time per step with no device work.
        const double steps = static_cast<double>(std::max(1L, w.total_steps()));
        if (m.step_time_s > 0)
            add_row(c, "step time (mean over the run)", "s", w.run_time_s / steps, m.step_time_s);
        // The reader's host time: the profile's time with no device work, per step.
        const double executing = metric("ExecuteTime").total_s;
        auto host = m.category_s.find("host");
        add_row(c, "time without device work", "s per step", (w.run_time_s - executing) / steps,
                host != m.category_s.end() ? host->second : 0.0);
    }
    return c;
}

std::string format_whole_run_comparison(const WholeRunComparison& c) {
    std::string out = fmt::format("podsim validate (whole run): {} against {} ({}, {} steps)\n\n", c.name,
                                  c.profile, c.format, c.steps);
    out += fmt::format("  {:<34} {:<26} {:>12} {:>12} {:>8}\n", "quantity", "unit", "predicted", "measured",
                       "error");
    for (const auto& r : c.rows) {
        auto show = [&](double v) {
            return r.unit.rfind("s", 0) == 0 ? core::format_seconds(v) : fmt::format("{:.3f}", v);
        };
        out += fmt::format("  {:<34} {:<26} {:>12} {:>12} {:>8}\n", r.quantity, r.unit, show(r.predicted),
                           show(r.measured), r.measured > 0 ? fmt::format("{:+.1f}%", 100.0 * r.error) : "-");
    }
    if (!c.predicted_debug.empty()) {
        out += "\n  PT_XLA_DEBUG=1 as podsim predicts it at the same step:\n";
        for (const auto& line : c.predicted_debug) out += "    " + line + "\n";
    }
    for (const auto& note : c.notes) out += "\n  note: " + note + "\n";
    return out;
}

std::string whole_run_comparison_json(const WholeRunComparison& c) {
    nlohmann::ordered_json j;
    j["schema"] = "podsim.whole-run-validation/v1";
    j["name"] = c.name;
    j["profile"] = c.profile;
    j["format"] = c.format;
    j["steps"] = c.steps;
    auto rows = nlohmann::ordered_json::array();
    for (const auto& r : c.rows) {
        rows.push_back({{"quantity", r.quantity},
                        {"unit", r.unit},
                        {"predicted", r.predicted},
                        {"measured", r.measured},
                        {"error", r.error}});
    }
    j["rows"] = rows;
    j["predicted_pt_xla_debug"] = c.predicted_debug;
    j["notes"] = c.notes;
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace podsim::profile
