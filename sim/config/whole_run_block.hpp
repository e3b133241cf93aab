#pragma once

// Internal to the config module: the `whole_run:` block of a run config (RunPlan).

#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/run_plan.hpp"
#include "config/run_spec.hpp"
#include "config/schema.hpp"
#include "core/diagnostics.hpp"

namespace podsim::config::detail {

// Reads `node` (the value of `path`, e.g. "whole_run"); every mistake is recorded in `d`.
// `spec` is the run the block applies to, for checks against the model and batch.
RunPlan parse_whole_run(const YAML::Node& node, const std::string& file, const std::string& path,
                        const RunSpec& spec, core::Diagnostics& d);

}  // namespace podsim::config::detail
