#pragma once

#include <string>
#include <vector>

#include "hardware/slice_shape.hpp"
#include "hardware/topology_spec.hpp"
#include "network/mesh_spec.hpp"
#include "workload/model_spec.hpp"
#include "workload/training_spec.hpp"

namespace podsim::parallel {

struct ShardingError {
    std::string key_path;  // where in the run config the problem shows, e.g. "training.global_batch"
    std::string message;
};

// What partitioning needs and the schema alone cannot express: the mesh against the slice (and
// slices), the batch against the data-parallel axes, every tensor-sharded dimension against its
// axis. Empty when the run can be partitioned. Config loading reports these as config errors.
std::vector<ShardingError> sharding_errors(const workload::ModelSpec& model,
                                           const workload::TrainingSpec& training,
                                           const hardware::TopologySpec& topology,
                                           const hardware::SliceShape& slice, int slices,
                                           const network::MeshSpec& mesh);

}  // namespace podsim::parallel
