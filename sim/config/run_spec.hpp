#pragma once

#include <optional>
#include <string>

#include "config/run_keys.hpp"
#include "config/run_plan.hpp"
#include "cost/calibration.hpp"
#include "hardware/topology_spec.hpp"
#include "network/mesh_spec.hpp"
#include "parallel/runtime_spec.hpp"
#include "workload/model_spec.hpp"
#include "workload/training_spec.hpp"

namespace podsim::config {

// A fully resolved run config (schema podsim.run/v1): what config loading produces and everything
// the simulation needs (run::simulate takes it as run::RunSpec). Plain values: copy it, change a
// field, simulate again. Defaults: run_keys.hpp and the keys of its parts.
struct RunSpec {
    std::string name;
    std::string source;  // file it came from, for messages
    workload::ModelSpec model;
    hardware::TopologySpec topology;
    hardware::SliceShape slice;
    int slices = static_cast<int>(run_key("slices").integer_default());
    // use the twisted wraparound where the topology and shape allow it
    bool twisted_torus = run_key("twisted_torus").boolean_default();
    network::MeshSpec mesh;
    workload::TrainingSpec training;
    parallel::RuntimeSpec runtime;
    bool mfu_attention = run_key("report.mfu_attention").boolean_default();
    cost::Calibration calibration = cost::Calibration::defaults();
    std::optional<RunPlan> whole_run;  // `whole_run:` a run of many steps (training_run module)

    bool operator==(const RunSpec&) const = default;
};

}  // namespace podsim::config
