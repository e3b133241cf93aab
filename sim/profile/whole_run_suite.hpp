#pragma once

#include <optional>
#include <string_view>
#include <vector>

#include "config/load.hpp"
#include "profile/calibrate.hpp"
#include "profile/suite.hpp"
#include "training_run/whole_run.hpp"

namespace podsim::profile {

// A published case whose run has a whole_run: block: each measured quantity with a tolerance
// (`<name>_rel` or `<name>_abs`) is one row. Quantities: run_time_s, steady_train_step_s,
// steady_eval_step_s, steady_gap_s, compiles_per_step and transfers_from_device_per_step (at the
// measured `steps`, as PyTorch/XLA counts them), throughput_gain_vs_<overlap> (the steady step
// with whole_run.overlap set to <overlap>, over this run's).
std::vector<CaseResult> evaluate_whole_run_case(const config::ValidationCase& c);

// A time quantity of a whole run by name: run_time_s, steady_train_step_s, steady_eval_step_s,
// steady_gap_s, mean_step_s (over the run), time_without_device_s (per step, as a trace reader
// measures it), mean:<Metric> (a PyTorch/XLA metric's mean per sample). Nothing for other names.
std::optional<double> whole_run_quantity(const training_run::WholeRun& w, std::string_view name);

// Parameters a whole run depends on beyond the single step: host work, transfers, compilation.
bool is_whole_run_parameter(std::string_view name);

// The calibration targets of a whole-run case: its measured time quantities.
std::vector<Target> whole_run_targets(const config::ValidationCase& c);

}  // namespace podsim::profile
