#include "profile/suite.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <map>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/diagnostics.hpp"
#include "core/quantity.hpp"
#include "cost/calibration.hpp"
#include "profile/calibrate.hpp"
#include "profile/measured_profile.hpp"
#include "profile/pod_viewer.hpp"
#include "profile/whole_run_suite.hpp"
#include "run/collective_run.hpp"
#include "run/simulate.hpp"

namespace podsim::profile {
namespace {

std::vector<std::string> parameters_calibrated_on(const std::string& id) {
    std::vector<std::string> names;
    for (const auto& p : cost::calibration_parameters()) {
        const std::string source(p.source);
        auto at = source.find(id);
        // The id as a whole word: "gpt2-2b-fsdp-v4-8" must not match "gpt2-2b-fsdp-v4-8x".
        while (at != std::string::npos) {
            const std::size_t end = at + id.size();
            const bool whole =
                end == source.size() || !(std::isalnum(static_cast<unsigned char>(source[end])) ||
                                          source[end] == '-' || source[end] == '_');
            if (whole && source.find("calibrated on") != std::string::npos) {
                names.emplace_back(p.name);
                break;
            }
            at = source.find(id, at + 1);
        }
    }
    return names;
}

std::string role_text(const CaseResult& r) {
    if (r.calibrates.empty()) return "held out";
    std::string s = "fit:";
    for (const auto& name : r.calibrates) s += " " + name;
    return s;
}

// Leave-one-out over the suite: each parameter is re-fitted on the step-time cases that calibrate
// it, leaving out one at a time (profile::calibrate does the leaving out).
void add_left_out_errors(const std::vector<config::ValidationCase>& cases, std::vector<CaseResult>& results) {
    std::map<std::string, std::vector<std::size_t>> fitted_on;
    for (std::size_t i = 0; i < results.size(); ++i) {
        if (results[i].metric != "step_time_s") continue;
        for (const auto& p : results[i].calibrates) fitted_on[p].push_back(i);
    }
    for (const auto& [parameter, indices] : fitted_on) {
        if (indices.size() < 2) continue;
        std::vector<CalibrationCase> fit_cases;
        for (std::size_t i : indices) {
            fit_cases.push_back(
                {cases[i].id, cases[i].run, {{Target::Kind::step_time, "", results[i].measured}}});
        }
        CalibrationResult fit = calibrate(fit_cases, {parameter}, cost::Calibration::defaults());
        for (std::size_t k = 0; k < indices.size(); ++k) {
            auto& r = results[indices[k]];
            r.left_out_error = std::max(r.left_out_error, fit.cases[k].rms_left_out);
        }
    }
}

}  // namespace

double left_out_median(const std::vector<CaseResult>& results) {
    std::vector<double> errors;
    for (const auto& r : results) {
        if (r.metric == "step_time_s" && r.left_out_error >= 0) errors.push_back(r.left_out_error);
    }
    if (errors.empty()) return -1.0;
    std::sort(errors.begin(), errors.end());
    const std::size_t n = errors.size();
    return n % 2 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2;
}

std::string_view status_name(CaseStatus status) {
    switch (status) {
        case CaseStatus::pass:
            return "pass";
        case CaseStatus::expected_miss:
            return "expected miss";
        case CaseStatus::fail:
            return "FAIL";
        case CaseStatus::unexpected_pass:
            return "UNEXPECTED PASS";
    }
    return "?";
}

std::vector<CaseResult> evaluate_suite(const std::vector<config::ValidationCase>& cases) {
    std::vector<CaseResult> results;
    for (const auto& c : cases) {
        if (c.run.whole_run) {
            for (auto& r : evaluate_whole_run_case(c)) {
                r.calibrates = parameters_calibrated_on(r.id);
                results.push_back(std::move(r));
            }
            continue;
        }
        run::Simulation sim = run::simulate(c.run);
        const auto& report = sim.report;
        CaseResult r;
        // XLA's own numbers for the step: the measured values, and whether it fitted.
        std::map<std::string, double> measured = c.measured;
        if (!c.profile.empty()) {
            const MeasuredProfile profile = read_profile(c.profile);
            if (profile.xla_memory) {
                measured.emplace("xla_peak_bytes", profile.xla_memory->peak());
                measured.emplace("xla_parameter_bytes", profile.xla_memory->parameter_bytes);
                if (profile.xla_memory->ran) r.expected_fits = *profile.xla_memory->ran;
                r.measured_host_offload_bytes = profile.xla_memory->host_temp_bytes;
            }
        }
        r.id = c.id;
        r.source = c.source;
        r.derived = c.derived;
        r.predicted_mfu = report.mfu;
        r.fits = report.memory.fits;
        r.memory_judged = true;
        r.peak_bytes = report.memory.peak_bytes;
        r.capacity_bytes = report.memory.capacity_bytes;
        r.host_offload_bytes = report.memory.host_offload_bytes;
        if (auto it = measured.find("mfu_6n"); it != measured.end()) r.measured_mfu = it->second;
        r.expected_miss = c.expected_miss.value_or("");
        bool judged = false;
        if (auto it = measured.find("step_time_s");
            it != measured.end() && c.tolerance.count("step_time_rel")) {
            r.metric = "step_time_s";
            r.predicted = report.step_time_s;
            r.measured = it->second;
            r.error = (r.predicted - r.measured) / r.measured;
            r.relative = true;
            r.tolerance = c.tolerance.at("step_time_rel");
            judged = true;
        } else if (auto af = measured.find("all_reduce_fraction");
                   af != measured.end() && c.tolerance.count("all_reduce_fraction_abs")) {
            r.metric = "all_reduce_fraction";
            for (const auto& s : report.op_stats) {
                if (s.category == "all-reduce") r.predicted = s.fraction;
            }
            r.measured = af->second;
            r.error = r.predicted - r.measured;
            r.relative = false;
            r.tolerance = c.tolerance.at("all_reduce_fraction_abs");
            judged = true;
        } else {
            // Memory per device against XLA's buffer assignment of the same program (a compiled
            // HloProto): the whole reservation, or the entry parameters against the sharded state.
            const auto& m = report.memory;
            for (const auto& [metric, predicted] :
                 {std::pair<std::string, double>{"xla_peak_bytes", m.peak_bytes},
                  std::pair<std::string, double>{"xla_parameter_bytes",
                                                 m.params_bytes + m.optimizer_bytes}}) {
                auto found = measured.find(metric);
                if (found == measured.end() || !c.tolerance.count(metric + "_rel") || found->second <= 0)
                    continue;
                r.metric = metric;
                r.predicted = predicted;
                r.measured = found->second;
                r.error = (r.predicted - r.measured) / r.measured;
                r.relative = true;
                r.tolerance = c.tolerance.at(metric + "_rel");
                judged = true;
                break;
            }
        }
        // The verdict: a published run fitted; a compiled step that did not fit must not either.
        bool within = judged && std::fabs(r.error) <= r.tolerance && r.fits == r.expected_fits.value_or(true);
        // Offloaded residuals: the host memory is a figure of its own, as close as the peak.
        if (r.metric == "xla_peak_bytes" && r.measured_host_offload_bytes > 0.0) {
            const double host_error = r.host_offload_bytes / r.measured_host_offload_bytes - 1.0;
            within = within && std::fabs(host_error) <= r.tolerance;
        }
        if (!judged) {
            r.status = CaseStatus::fail;
            r.metric = "(no measured metric with a tolerance)";
        } else if (within) {
            r.status = c.expected_miss ? CaseStatus::unexpected_pass : CaseStatus::pass;
        } else {
            r.status = c.expected_miss ? CaseStatus::expected_miss : CaseStatus::fail;
        }
        r.calibrates = parameters_calibrated_on(r.id);
        if (r.calibrates.empty() && r.metric == "step_time_s") r.left_out_error = std::fabs(r.error);
        results.push_back(std::move(r));
    }
    add_left_out_errors(cases, results);
    return results;
}

namespace {

CaseStatus judge(bool within, bool marked) {
    if (within) return marked ? CaseStatus::unexpected_pass : CaseStatus::pass;
    return marked ? CaseStatus::expected_miss : CaseStatus::fail;
}

}  // namespace

std::vector<CaseResult> evaluate_collective_suite(const std::vector<config::CollectiveCase>& cases) {
    std::vector<CaseResult> results;
    for (const auto& c : cases) {
        run::CollectiveRequest request;
        request.topology = c.topology;
        request.slice = c.slice;
        request.mesh = c.mesh;
        auto kind = collectives::parse_collective(c.op);
        if (!kind) {
            core::Diagnostics d;
            d.error({c.file, 0, 0}, "op", "unknown collective '" + c.op + "'");
            throw core::UserError(d);
        }
        request.kind = *kind;
        request.axes = c.axes;
        CaseResult r;
        r.id = c.id;
        r.source = c.source;
        r.expected_miss = c.expected_miss.value_or("");
        if (!c.pod_viewer.empty()) {
            PodViewer pv = read_pod_viewer(c.pod_viewer);
            std::vector<double> errors;
            for (const auto& ar : pv.all_reduces) {
                request.bytes = ar.data_bytes;
                double predicted = run::run_collective(request).time_s;
                errors.push_back(std::fabs(predicted - ar.duration_s) / ar.duration_s);
            }
            std::sort(errors.begin(), errors.end());
            std::size_t n = errors.size();
            double median = n == 0 ? 0.0 : (n % 2 ? errors[n / 2] : (errors[n / 2 - 1] + errors[n / 2]) / 2);
            r.metric = "median_rel_error";
            r.predicted = median;
            r.measured = 0.0;
            r.error = median;
            r.relative = false;
            r.tolerance = c.tolerance_median_rel;
            r.status = judge(n > 0 && median <= r.tolerance, c.expected_miss.has_value());
        } else {
            request.bytes = c.bytes;
            double predicted = run::run_collective(request).time_s;
            r.metric = "time_s";
            r.predicted = predicted;
            r.measured = c.measured_time;
            if (c.tolerance_abs > 0) {
                r.error = predicted - c.measured_time;
                r.relative = false;
                r.tolerance = c.tolerance_abs;
            } else {
                r.error = (predicted - c.measured_time) / c.measured_time;
                r.relative = true;
                r.tolerance = c.tolerance_rel;
            }
            r.status = judge(std::fabs(r.error) <= r.tolerance, c.expected_miss.has_value());
        }
        r.calibrates = parameters_calibrated_on(r.id);
        results.push_back(std::move(r));
    }
    return results;
}

namespace {
std::string value_text(const CaseResult& r, double v) {
    if (r.metric == "step_time_s") return fmt::format("{:.3f} s", v);
    if (r.metric == "time_s") return core::format_seconds(v);
    if (r.metric.size() > 2 && r.metric.compare(r.metric.size() - 2, 2, "_s") == 0)
        return core::format_seconds(v);
    if (r.metric == "median_rel_error") return v == 0.0 ? std::string("(per op)") : fmt::format("{:.2f}", v);
    if (r.metric.size() > 6 && r.metric.compare(r.metric.size() - 6, 6, "_bytes") == 0)
        return core::format_bytes(v);
    return fmt::format("{:.3f}", v);
}
std::string error_text(const CaseResult& r) {
    if (r.relative) return fmt::format("{:+.1f}%", 100.0 * r.error);
    if (r.metric == "time_s" || (r.metric.size() > 2 && r.metric.compare(r.metric.size() - 2, 2, "_s") == 0))
        return (r.error >= 0 ? "+" : "-") + core::format_seconds(std::fabs(r.error));
    if (r.metric == "median_rel_error") return fmt::format("{:.0f}%", 100.0 * r.error);
    return fmt::format("{:+.3f}", r.error);
}
std::string tolerance_text(const CaseResult& r) {
    if (r.relative || r.metric == "median_rel_error") return fmt::format("±{:.0f}%", 100.0 * r.tolerance);
    if (r.metric == "time_s") return "±" + core::format_seconds(r.tolerance);
    return fmt::format("±{:.3f}", r.tolerance);
}
std::string left_out_text(const CaseResult& r) {
    if (r.metric != "step_time_s") return "";
    if (r.left_out_error < 0) return "-";
    return fmt::format("{:.1f}%", 100.0 * r.left_out_error);
}
std::string memory_text(const CaseResult& r) {
    if (!r.memory_judged) return "";
    constexpr double kGiB = 1024.0 * 1024 * 1024;
    std::string text = fmt::format("{:.1f}/{:.1f} GiB {}", r.peak_bytes / kGiB, r.capacity_bytes / kGiB,
                                   r.fits ? "fits" : "OOM");
    if (r.measured_host_offload_bytes > 0.0)
        text += fmt::format(", host {:.2f}/{:.2f} GiB", r.host_offload_bytes / kGiB,
                            r.measured_host_offload_bytes / kGiB);
    return text;
}
std::string mfu_text(const CaseResult& r) {
    if (r.metric == "time_s" || r.metric == "median_rel_error") return "";
    if (r.metric.rfind("xla_", 0) == 0) return "";  // a memory check: the program ran on other hardware
    if (r.predicted_mfu == 0.0 && r.measured_mfu == 0.0) return "";  // whole-run quantities
    std::string s = fmt::format("{:.1f}%", 100.0 * r.predicted_mfu);
    if (r.measured_mfu > 0) s += fmt::format(" / {:.1f}%", 100.0 * r.measured_mfu);
    return s;
}
}  // namespace

std::string format_suite(const std::vector<CaseResult>& results) {
    std::string out = fmt::format("{:<28} {:<20} {:>11} {:>11} {:>8} {:>7} {:>8} {:>15} {:>21}  {:<14} {}\n",
                                  "case", "metric", "predicted", "measured", "error", "tol", "left out",
                                  "MFU pred/meas", "HBM peak/capacity", "status", "role");
    int passed = 0, failed = 0, expected = 0;
    for (const auto& r : results) {
        out += fmt::format("{:<28} {:<20} {:>11} {:>11} {:>8} {:>7} {:>8} {:>15} {:>21}  {:<14} {}\n", r.id,
                           r.metric, value_text(r, r.predicted), value_text(r, r.measured), error_text(r),
                           tolerance_text(r), left_out_text(r), mfu_text(r), memory_text(r),
                           status_name(r.status), role_text(r));
        if (r.status == CaseStatus::expected_miss)
            out += fmt::format("  {:<26} why: {}\n", "", r.expected_miss);
        if (r.status == CaseStatus::pass) ++passed;
        if (r.status == CaseStatus::expected_miss) ++expected;
        if (r.status == CaseStatus::fail || r.status == CaseStatus::unexpected_pass) ++failed;
    }
    if (double median = left_out_median(results); median >= 0) {
        out += fmt::format(
            "leave-one-out median step-time error: {:.1f}% (each case predicted with every "
            "parameter it calibrates re-fitted on the others)\n",
            100.0 * median);
    }
    out += fmt::format("validation: {} passed, {} failed, {} skipped\n", passed, failed, expected);
    return out;
}

std::string format_suite_markdown(const std::vector<CaseResult>& results) {
    std::string out =
        "| case | metric | predicted | measured | error | tolerance | left out | MFU predicted / published | "
        "HBM peak / capacity | status | role | source |\n"
        "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    std::string reasons;
    for (const auto& r : results) {
        std::string status(status_name(r.status));
        if (r.status == CaseStatus::expected_miss) {
            status += " (below)";
            reasons += fmt::format("- **{}**: {}\n", r.id, r.expected_miss);
        }
        out += fmt::format("| {} | {} | {} | {}{} | {} | {} | {} | {} | {} | {} | {} | {} |\n", r.id,
                           r.metric, value_text(r, r.predicted), value_text(r, r.measured),
                           r.derived ? " (derived)" : "", error_text(r), tolerance_text(r), left_out_text(r),
                           mfu_text(r), memory_text(r), status, role_text(r), r.source);
    }
    if (double median = left_out_median(results); median >= 0) {
        out += fmt::format(
            "\nLeave-one-out median step-time error: {:.1f}% (each case predicted with every "
            "parameter it calibrates re-fitted on the others).\n",
            100.0 * median);
    }
    if (!reasons.empty()) out += "\nExpected misses, and what the model lacks:\n\n" + reasons;
    return out;
}

std::string format_suite_json(const std::vector<CaseResult>& results) {
    nlohmann::ordered_json cases = nlohmann::ordered_json::array();
    for (const auto& r : results) {
        cases.push_back({{"id", r.id},
                         {"metric", r.metric},
                         {"predicted", r.predicted},
                         {"measured", r.measured},
                         {"error", r.error},
                         {"relative", r.relative},
                         {"tolerance", r.tolerance},
                         {"predicted_mfu", r.predicted_mfu},
                         {"measured_mfu", r.measured_mfu},
                         {"fits", r.fits},
                         {"host_offload_bytes", r.host_offload_bytes},
                         {"measured_host_offload_bytes", r.measured_host_offload_bytes},
                         {"peak_bytes", r.peak_bytes},
                         {"capacity_bytes", r.capacity_bytes},
                         {"status", std::string(status_name(r.status))},
                         {"expected_miss", r.expected_miss},
                         {"calibrates", r.calibrates},
                         {"left_out_error", r.left_out_error},
                         {"source", r.source}});
    }
    nlohmann::ordered_json j = {{"schema", "podsim.validation-suite/v1"}, {"cases", cases}};
    // Names and ids come from user files: invalid UTF-8 becomes U+FFFD rather than an exception.
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

bool suite_passed(const std::vector<CaseResult>& results) {
    for (const auto& r : results) {
        if (r.status == CaseStatus::fail || r.status == CaseStatus::unexpected_pass) return false;
    }
    return true;
}

}  // namespace podsim::profile
