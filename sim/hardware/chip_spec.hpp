#pragma once

#include <map>
#include <string>

#include "core/dtype.hpp"
#include "hardware/topology_keys.hpp"

namespace podsim::hardware {

// One accelerator chip as the cost model sees it.
struct ChipSpec {
    std::string name;
    std::map<core::DType, double> peak_flops;  // FLOP/s per chip, by operand dtype
    double hbm_capacity = 0.0;                 // bytes
    double hbm_bytes_limit = 0.0;              // bytes the runtime grants XLA; 0 = hbm_capacity
    double hbm_bandwidth = 0.0;                // bytes/s
    int mxu_tile = static_cast<int>(topology_key("chip.mxu_tile").integer_default());  // systolic array side
    int tensorcores_per_chip = static_cast<int>(topology_key("chip.tensorcores_per_chip").integer_default());
    // JAX devices per chip: 2 on v2/v3 (each TensorCore), 1 on megacore v4/v5p and on v5e/v6e. A mesh
    // counts devices; each device has 1/devices_per_chip of the chip's peak, HBM and HBM bandwidth.
    int devices_per_chip = static_cast<int>(topology_key("chip.devices_per_chip").integer_default());
    double intra_chip_bandwidth = 0.0;  // bytes/s, one direction between two devices of one chip; 0 = unset
    // A GPU's, whose compiler (XLA:GPU) splits small dots over the contraction; 0 on a TPU.
    int streaming_multiprocessors =
        static_cast<int>(topology_key("chip.streaming_multiprocessors").integer_default());

    // Peak for matmuls whose operands have `dtype`. fp32 matmuls fall back to the bf16 peak, since
    // XLA's default precision on TPU runs them as one bf16 pass (jax.default_matmul_precision docs).
    double peak_flops_for(core::DType dtype) const;
    // What one device (one mesh position) has.
    double device_peak_flops_for(core::DType dtype) const { return peak_flops_for(dtype) / devices_per_chip; }
    double device_hbm_capacity() const { return hbm_capacity / devices_per_chip; }
    // What XLA may allocate on one device: the memory verdict's limit.
    double device_hbm_bytes_limit() const {
        return (hbm_bytes_limit > 0.0 ? hbm_bytes_limit : hbm_capacity) / devices_per_chip;
    }
    double device_hbm_bandwidth() const { return hbm_bandwidth / devices_per_chip; }
    bool operator==(const ChipSpec&) const = default;
};

}  // namespace podsim::hardware
