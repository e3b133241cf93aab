#pragma once

#include <string>

#include "profile/measured_profile.hpp"

namespace podsim::profile {

// True when the text holds lines of PyTorch/XLA's debug analysis ("pt-xla-profiler: ...").
bool is_pt_xla_debug_log(const std::string& text);

// A log of a run with PT_XLA_DEBUG=1 (only its `pt-xla-profiler:` lines matter): the last
// "METRIC too frequent: N counts during M steps" of each metric gives its process-wide count over
// M steps (torch_xla runtime/metrics_analysis.cpp). No times: the step is not compared.
MeasuredProfile read_pt_xla_debug_log(const std::string& path, const std::string& text);

}  // namespace podsim::profile
