#pragma once

#include <vector>

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
Timeline schedule(const parallel::DeviceProgram& program, const std::vector<cost::OpCost>& costs,
                  const parallel::RuntimeSpec& runtime);

}  // namespace podsim::scheduler
