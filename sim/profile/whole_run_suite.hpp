#pragma once

#include <vector>

#include "config/load.hpp"
#include "profile/suite.hpp"

namespace podsim::profile {

// A published case whose run has a whole_run: block: each measured quantity with a tolerance
// (`<name>_rel` or `<name>_abs`) is one row. Quantities: run_time_s, steady_train_step_s,
// steady_eval_step_s, steady_gap_s, compiles_per_step and transfers_from_device_per_step (at the
// measured `steps`, as PyTorch/XLA counts them), throughput_gain_vs_<overlap> (the steady step
// with whole_run.overlap set to <overlap>, over this run's).
std::vector<CaseResult> evaluate_whole_run_case(const config::ValidationCase& c);

}  // namespace podsim::profile
