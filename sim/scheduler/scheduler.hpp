#pragma once

#include <vector>

#include "collectives/comm_plan.hpp"
#include "cost/cost_model.hpp"
#include "parallel/device_program.hpp"
#include "parallel/runtime_spec.hpp"
#include "scheduler/timeline.hpp"

namespace podsim::scheduler {

// Runs the device program on its resources in a discrete-event simulation. Each resource (the
// TensorCore, each ICI mesh axis, DCN, the host) executes its ops one at a time in program order,
// like an in-order XLA stream; an op starts when its resource is free and every op it depends on
// has finished. With synchronous collectives (runtime.async() false) a collective also waits for
// the compute before it and the compute after it waits for the collective, so communication
// blocks the TensorCore; with async ones only data dependencies order them and they overlap.
//
// With a network, ICI collectives with a plan are not given a fixed duration: their flows run on
// the shared links of the flow-level network model and finish when their last phase does.
struct NetworkInput {
    std::vector<const collectives::CommPlan*> plan_of_op;  // indexed like program.ops; null = fixed cost
    std::vector<double> link_bandwidth;                    // bytes/s per torus link id
};

Timeline schedule(const parallel::DeviceProgram& program, const std::vector<cost::OpCost>& costs,
                  const parallel::RuntimeSpec& runtime, const NetworkInput* network = nullptr);

}  // namespace podsim::scheduler
