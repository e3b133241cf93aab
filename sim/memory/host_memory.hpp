#pragma once

namespace podsim::memory {

// Host RAM while the model is created, per host: the first thing to run out for the largest models
// when every process builds the whole model before sharding it.
struct HostMemory {
    double peak_bytes = 0.0;      // per host
    double capacity_bytes = 0.0;  // topology host_memory (0 = unknown)
    bool fits = true;
    int processes = 1;  // per host
    bool full_model = false;
};

struct HostMemoryInput {
    double total_params = 0.0;
    double param_bytes = 4.0;            // per parameter
    double params_per_chip_bytes = 0.0;  // the chip's shard, bytes
    int chips_per_host = 1;
    bool process_per_chip = false;
    bool full_model_on_host = false;
    double host_capacity = 0.0;
};

// full: every process holds the unsharded parameters; sharded: the host holds its chips' shards.
HostMemory host_memory(const HostMemoryInput& input);

}  // namespace podsim::memory
