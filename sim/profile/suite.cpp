#include "profile/suite.hpp"

#include <cmath>

#include <fmt/format.h>

#include "run/simulate.hpp"

namespace podsim::profile {

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
        run::Simulation sim = run::simulate(c.run);
        const auto& report = sim.report;
        CaseResult r;
        r.id = c.id;
        r.source = c.source;
        r.derived = c.derived;
        r.predicted_mfu = report.mfu;
        r.fits = report.memory.fits;
        if (auto it = c.measured.find("mfu_6n"); it != c.measured.end()) r.measured_mfu = it->second;
        r.expected_miss = c.expected_miss.value_or("");
        bool judged = false;
        if (auto it = c.measured.find("step_time_s");
            it != c.measured.end() && c.tolerance.count("step_time_rel")) {
            r.metric = "step_time_s";
            r.predicted = report.step_time_s;
            r.measured = it->second;
            r.error = (r.predicted - r.measured) / r.measured;
            r.relative = true;
            r.tolerance = c.tolerance.at("step_time_rel");
            judged = true;
        } else if (auto af = c.measured.find("all_reduce_fraction");
                   af != c.measured.end() && c.tolerance.count("all_reduce_fraction_abs")) {
            r.metric = "all_reduce_fraction";
            for (const auto& s : report.op_stats) {
                if (s.category == "all-reduce") r.predicted = s.fraction;
            }
            r.measured = af->second;
            r.error = r.predicted - r.measured;
            r.relative = false;
            r.tolerance = c.tolerance.at("all_reduce_fraction_abs");
            judged = true;
        }
        bool within = judged && std::fabs(r.error) <= r.tolerance;
        if (!judged) {
            r.status = CaseStatus::fail;
            r.metric = "(no measured metric with a tolerance)";
        } else if (within) {
            r.status = c.expected_miss ? CaseStatus::unexpected_pass : CaseStatus::pass;
        } else {
            r.status = c.expected_miss ? CaseStatus::expected_miss : CaseStatus::fail;
        }
        results.push_back(std::move(r));
    }
    return results;
}

namespace {
std::string value_text(const CaseResult& r, double v) {
    return r.metric == "step_time_s" ? fmt::format("{:.3f} s", v) : fmt::format("{:.3f}", v);
}
std::string error_text(const CaseResult& r) {
    return r.relative ? fmt::format("{:+.1f}%", 100.0 * r.error) : fmt::format("{:+.3f}", r.error);
}
std::string tolerance_text(const CaseResult& r) {
    return r.relative ? fmt::format("±{:.0f}%", 100.0 * r.tolerance) : fmt::format("±{:.3f}", r.tolerance);
}
std::string mfu_text(const CaseResult& r) {
    std::string s = fmt::format("{:.1f}%", 100.0 * r.predicted_mfu);
    if (r.measured_mfu > 0) s += fmt::format(" / {:.1f}%", 100.0 * r.measured_mfu);
    return s;
}
}  // namespace

std::string format_suite(const std::vector<CaseResult>& results) {
    std::string out = fmt::format("{:<28} {:<20} {:>11} {:>11} {:>8} {:>7} {:>15}  {}\n", "case", "metric",
                                  "predicted", "measured", "error", "tol", "MFU pred/meas", "status");
    int passed = 0, failed = 0, expected = 0;
    for (const auto& r : results) {
        out += fmt::format("{:<28} {:<20} {:>11} {:>11} {:>8} {:>7} {:>15}  {}\n", r.id, r.metric,
                           value_text(r, r.predicted), value_text(r, r.measured), error_text(r),
                           tolerance_text(r), mfu_text(r), status_name(r.status));
        if (r.status == CaseStatus::expected_miss)
            out += fmt::format("  {:<26} why: {}\n", "", r.expected_miss);
        if (r.status == CaseStatus::pass) ++passed;
        if (r.status == CaseStatus::expected_miss) ++expected;
        if (r.status == CaseStatus::fail || r.status == CaseStatus::unexpected_pass) ++failed;
    }
    out += fmt::format("validation: {} passed, {} failed, {} skipped\n", passed, failed, expected);
    return out;
}

std::string format_suite_markdown(const std::vector<CaseResult>& results) {
    std::string out =
        "| case | metric | predicted | measured | error | tolerance | MFU predicted / published | status | "
        "source |\n"
        "|---|---|---|---|---|---|---|---|---|\n";
    std::string reasons;
    for (const auto& r : results) {
        std::string status(status_name(r.status));
        if (r.status == CaseStatus::expected_miss) {
            status += " (below)";
            reasons += fmt::format("- **{}**: {}\n", r.id, r.expected_miss);
        }
        out +=
            fmt::format("| {} | {} | {} | {}{} | {} | {} | {} | {} | {} |\n", r.id, r.metric,
                        value_text(r, r.predicted), value_text(r, r.measured), r.derived ? " (derived)" : "",
                        error_text(r), tolerance_text(r), mfu_text(r), status, r.source);
    }
    if (!reasons.empty()) out += "\nExpected misses, and what the model lacks:\n\n" + reasons;
    return out;
}

bool suite_passed(const std::vector<CaseResult>& results) {
    for (const auto& r : results) {
        if (r.status == CaseStatus::fail || r.status == CaseStatus::unexpected_pass) return false;
    }
    return true;
}

}  // namespace podsim::profile
