#pragma once

#include "config/run_plan.hpp"

namespace podsim::training_run {

// The plan is defined next to its loader, below the pipeline (as config::RunSpec is); the whole-run
// simulation takes it under these names.
using config::Accumulate;
using config::CompileCache;
using config::EvalPlan;
using config::LengthDistribution;
using config::Overlap;
using config::overlap_name;
using config::Padding;
using config::RunPlan;
using config::SequenceLengths;

}  // namespace podsim::training_run
