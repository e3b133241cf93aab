#include "memory/host_memory.hpp"

namespace podsim::memory {

HostMemory host_memory(const HostMemoryInput& in) {
    HostMemory h;
    h.processes = in.process_per_chip ? in.chips_per_host : 1;
    h.full_model = in.full_model_on_host;
    h.capacity_bytes = in.host_capacity;
    const int devices_per_host = in.chips_per_host * in.devices_per_chip;
    if (in.full_model_on_host) {
        h.model_copies = in.process_per_chip ? devices_per_host : 1;
        h.peak_bytes = static_cast<double>(h.model_copies) * in.total_params * in.param_bytes;
    } else {
        h.peak_bytes = static_cast<double>(devices_per_host) * in.params_per_device_bytes;
    }
    h.fits = in.host_capacity <= 0.0 || h.peak_bytes <= in.host_capacity;
    return h;
}

}  // namespace podsim::memory
