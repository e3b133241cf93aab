#pragma once

#include <string>

#include "training_run/whole_run.hpp"

namespace podsim::training_run {

// For a person: the run's time, warm-up vs steady state, the compile cache, transfers, the gap
// between executions, then the PyTorch/XLA metrics and what PT_XLA_DEBUG=1 would print.
std::string format_whole_run(const WholeRun& run);
// Schema podsim.whole-run/v1.
std::string whole_run_json(const WholeRun& run);
// The counters in the layout of torch_xla.debug.metrics.metrics_report(), so that
// `podsim validate --profile` and the tools users already have read it like a measured one.
std::string metrics_report(const WholeRun& run);
// Chrome trace (Perfetto): one track per host thread, the device and each transfer direction, and
// a ProfilerStep#N span per step.
std::string whole_run_trace(const WholeRun& run);

}  // namespace podsim::training_run
