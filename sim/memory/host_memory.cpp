#include "memory/host_memory.hpp"

namespace podsim::memory {

HostMemory host_memory(const HostMemoryInput& in) {
    HostMemory h;
    h.processes = in.process_per_chip ? in.chips_per_host : 1;
    h.full_model = in.full_model_on_host;
    h.capacity_bytes = in.host_capacity;
    if (in.full_model_on_host) {
        h.peak_bytes = static_cast<double>(h.processes) * in.total_params * in.param_bytes;
    } else {
        h.peak_bytes = static_cast<double>(in.chips_per_host) * in.params_per_chip_bytes;
    }
    h.fits = in.host_capacity <= 0.0 || h.peak_bytes <= in.host_capacity;
    return h;
}

}  // namespace podsim::memory
