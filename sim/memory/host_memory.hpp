#pragma once

namespace podsim::memory {

// Host RAM while the model is created, per host: the first thing to run out for the largest models
// when every process builds the whole model before sharding it.
struct HostMemory {
    double peak_bytes = 0.0;      // per host
    double capacity_bytes = 0.0;  // topology host_memory (0 = unknown)
    bool fits = true;
    int processes = 1;     // per host
    int model_copies = 0;  // unsharded copies built on the host (full init), 0 when sharded
    bool full_model = false;
};

struct HostMemoryInput {
    double total_params = 0.0;
    double param_bytes = 4.0;              // per parameter
    double params_per_device_bytes = 0.0;  // one device's shard, bytes
    int chips_per_host = 1;                // of the slice, on one host
    int devices_per_chip = 1;              // the mesh uses
    // PyTorch/XLA multi-process: one process per chip, each device driven by its own thread (v2/v3:
    // "4 processes with 2 threads each", PyTorch/XLA PJRT docs), each building the model. Otherwise
    // (JAX, PyTorch/XLA SPMD) one process per host.
    bool process_per_chip = false;
    bool full_model_on_host = false;
    double host_capacity = 0.0;
};

// full: every process (every device thread) holds the unsharded parameters; sharded: the host holds
// its devices' shards.
HostMemory host_memory(const HostMemoryInput& input);

}  // namespace podsim::memory
