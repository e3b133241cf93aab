#pragma once

#include "config/run_spec.hpp"

namespace podsim::run {

// The spec is defined next to its loader, below the pipeline, so that config loading does not
// depend on simulation; the pipeline takes it under this name.
using RunSpec = config::RunSpec;

}  // namespace podsim::run
