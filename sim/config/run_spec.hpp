#pragma once

#include <optional>
#include <string>

#include "config/run_plan.hpp"
#include "cost/calibration.hpp"
#include "hardware/topology_spec.hpp"
#include "network/mesh_spec.hpp"
#include "parallel/runtime_spec.hpp"
#include "workload/model_spec.hpp"
#include "workload/training_spec.hpp"

namespace podsim::config {

// A fully resolved run config (schema podsim.run/v1): what config loading produces and everything
// the simulation needs (run::simulate takes it as RunSpec). Plain values: copy it, change a field, simulate
// again.
struct RunSpec {
    std::string name;
    std::string source;  // file it came from, for messages
    workload::ModelSpec model;
    hardware::TopologySpec topology;
    hardware::SliceShape slice;
    int slices = 1;
    bool twisted_torus = false;  // use the twisted wraparound where the topology and shape allow it
    network::MeshSpec mesh;
    workload::TrainingSpec training;
    parallel::RuntimeSpec runtime;
    bool mfu_attention = false;
    cost::Calibration calibration = cost::Calibration::defaults();
    std::optional<RunPlan> whole_run;  // `whole_run:` a run of many steps (training_run module)
};

}  // namespace podsim::config
