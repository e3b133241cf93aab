#pragma once

// Internal to the config module: the `whole_run:` block of a run config (training_run::RunPlan).

#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/schema.hpp"
#include "core/diagnostics.hpp"
#include "run/run_spec.hpp"
#include "training_run/run_plan.hpp"

namespace podsim::config::detail {

// The block's keys, as the run schema lists them (for `explain run` and unknown-key checks).
const std::vector<KeyDoc>& whole_run_keys();

// Reads `node` (the value of `path`, e.g. "whole_run"); every mistake is recorded in `d`.
// `spec` is the run the block applies to, for checks against the model and batch.
training_run::RunPlan parse_whole_run(const YAML::Node& node, const std::string& file,
                                      const std::string& path, const run::RunSpec& spec,
                                      core::Diagnostics& d);

}  // namespace podsim::config::detail
