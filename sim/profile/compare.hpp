#pragma once

#include <optional>
#include <string>
#include <vector>

#include "profile/measured_profile.hpp"
#include "report/run_report.hpp"

namespace podsim::profile {

struct CategoryComparison {
    std::string category;
    double predicted_s = 0.0;   // per step
    double measured_s = 0.0;    // per step
    double difference_s = 0.0;  // predicted - measured
    double error = 0.0;         // relative to measured (0 when nothing was measured)
};

struct Comparison {
    std::string name;
    std::string profile;
    std::string format;
    int steps = 1;
    // What the step row compares: "step time", or "execution" when the profile times device
    // executions only (a PyTorch/XLA metrics report's ExecuteTime), so that compilation and host
    // time are compared in their own rows and never inside the step.
    std::string step_label = "step time";
    double predicted_step_s = 0.0;
    double measured_step_s = 0.0;
    std::vector<CategoryComparison> categories;  // largest absolute difference first
    // Matmul time by shape class, when the profile gives every matmul's shape.
    std::vector<CategoryComparison> matmul_shapes;
    std::vector<MeasuredOp> largest_measured;  // the profile's biggest ops
    // Against XLA's buffer assignment (a compiled HloProto): per device, podsim's peak against XLA's
    // whole reservation, and podsim's parameters and optimizer state against XLA's entry
    // parameters (which also hold the step's batch).
    bool has_memory = false;
    // From memory_analysis() JSON lines: offloaded memory, the allocator's grant and whether the
    // step ran (unknown: not said).
    double predicted_host_offload_bytes = 0.0, measured_host_temp_bytes = 0.0;
    double predicted_limit_bytes = 0.0, measured_limit_bytes = 0.0;
    bool predicted_fits = true;
    std::optional<bool> measured_ran;
    double predicted_peak_bytes = 0.0;
    double measured_peak_bytes = 0.0;
    double predicted_state_bytes = 0.0;
    double measured_parameter_bytes = 0.0;
    double measured_temp_bytes = 0.0;
    std::vector<std::string> notes;
};

// Predicted vs measured time per op category and per step; matmuls also by shape class on a chip
// with this MXU tile.
Comparison compare(const report::RunReport& predicted, const MeasuredProfile& measured, int mxu_tile);
std::string format_comparison(const Comparison& c);
std::string comparison_json(const Comparison& c);

}  // namespace podsim::profile
