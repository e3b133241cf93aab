#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hardware/slice_shape.hpp"
#include "hardware/topology_spec.hpp"
#include "network/mesh_spec.hpp"
#include "workload/model_spec.hpp"
#include "workload/training_spec.hpp"

namespace podsim::parallel {

// Layers times microbatches a step may have. Each layer of each microbatch becomes some 30 ops and
// their dependencies in the program, the timeline and the memory profile (about 30 KB and 0.1 ms
// per layer pass): 100,000 layers took 3 GB and 13 s, a million 18 GB. The bound keeps every run
// under a few seconds and a gigabyte; the largest published models have about 120 layers.
inline constexpr std::int64_t kMaxLayerPasses = 20'000;

struct ShardingError {
    std::string key_path;  // where in the run config the problem shows, e.g. "training.global_batch"
    std::string message;
};

// What partitioning needs and the schema alone cannot express: the mesh against the slice (and
// slices), the batch against the data-parallel axes, every tensor-sharded dimension against its
// axis, and the size of the program (kMaxLayerPasses). Empty when the run can be partitioned. Config loading
// reports these as config errors.
std::vector<ShardingError> sharding_errors(const workload::ModelSpec& model,
                                           const workload::TrainingSpec& training,
                                           const hardware::TopologySpec& topology,
                                           const hardware::SliceShape& slice, int slices,
                                           const network::MeshSpec& mesh);

}  // namespace podsim::parallel
