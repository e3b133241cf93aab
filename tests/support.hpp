#pragma once

#include <string>

#include "config/load.hpp"
#include "run/simulate.hpp"

namespace podsim::test {

inline std::string source_path(const std::string& relative) {
    return std::string(PODSIM_SOURCE_DIR) + "/" + relative;
}

inline run::RunSpec load_config(const std::string& relative) {
    return config::load_run_file(source_path(relative));
}

inline run::Simulation simulate_config(const std::string& relative) {
    return run::simulate(load_config(relative));
}

// A run config from YAML text; bare model/topology names resolve in the source tree.
inline run::RunSpec run_from_text(const std::string& yaml) {
    return config::load_run_text(yaml, "<test>", source_path("configs"));
}

}  // namespace podsim::test
