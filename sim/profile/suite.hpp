#pragma once

#include <optional>
#include <string>
#include <vector>

#include "config/load.hpp"

namespace podsim::profile {

enum class CaseStatus {
    pass,             // within tolerance
    expected_miss,    // outside tolerance, and the case says why (kept visible, not hidden)
    fail,             // outside tolerance with no reason given
    unexpected_pass,  // marked expected_miss but now within tolerance: remove the mark
};

std::string_view status_name(CaseStatus status);

struct CaseResult {
    std::string id;
    std::string source;
    std::string metric;  // step_time_s, all_reduce_fraction, xla_peak_bytes, xla_parameter_bytes
    double predicted = 0.0;
    double measured = 0.0;
    double error = 0.0;  // relative for step_time_s, absolute for fractions
    bool relative = true;
    double tolerance = 0.0;
    double predicted_mfu = 0.0;
    double measured_mfu = 0.0;  // 0 when not published
    // Memory verdict: every published end-to-end case ran in production, so it must be predicted to
    // fit; a case that does not counts as a miss whatever its step time.
    bool fits = true;
    // Whether the measured step fitted in the memory it was granted, where the source says (XLA's
    // numbers of a step that was run); otherwise the case ran in production, so it must fit.
    std::optional<bool> expected_fits;
    bool memory_judged = false;
    double peak_bytes = 0.0;
    double capacity_bytes = 0.0;
    // Host memory of offloaded residuals, podsim's and XLA's (host_temp_size_in_bytes), judged with
    // the peak's tolerance where XLA offloaded any; 0 when it did not.
    double host_offload_bytes = 0.0;
    double measured_host_offload_bytes = 0.0;
    bool derived = false;
    std::string expected_miss;
    CaseStatus status = CaseStatus::pass;
    // Calibration parameters fitted on this case (their documented source names it): the case then
    // checks consistency, not prediction. Empty for a held-out case.
    std::vector<std::string> calibrates;
    // The case predicted with every parameter it calibrates re-fitted on the other cases that
    // calibrate it (relative error, unsigned); for a held-out case its own error. Negative when
    // the case is the only one fitting a parameter.
    double left_out_error = -1.0;
};

// Median of the left-out errors of the end-to-end step-time cases (each case predicted without
// itself in any fit); negative when there is none.
double left_out_median(const std::vector<CaseResult>& results);

std::vector<CaseResult> evaluate_suite(const std::vector<config::ValidationCase>& cases);

// Collective cases: metric time_s (relative or absolute tolerance), or, for a pod-viewer file,
// median_rel_error over its all-reduces.
std::vector<CaseResult> evaluate_collective_suite(const std::vector<config::CollectiveCase>& cases);

// A plain-text table (one row per case, then "N passed, N failed"), or the Markdown table of README.
std::string format_suite(const std::vector<CaseResult>& results);
std::string format_suite_markdown(const std::vector<CaseResult>& results);
std::string format_suite_json(const std::vector<CaseResult>& results);
bool suite_passed(const std::vector<CaseResult>& results);

}  // namespace podsim::profile
