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
    double hbm_bandwidth = 0.0;                // bytes/s
    int mxu_tile = static_cast<int>(topology_key("chip.mxu_tile").integer_default());  // systolic array side
    // per chip (one JAX device per chip on v4/v5p: megacore)
    int tensorcores = static_cast<int>(topology_key("chip.tensorcores").integer_default());

    // Peak for matmuls whose operands have `dtype`. fp32 matmuls fall back to the bf16 peak, since
    // XLA's default precision on TPU runs them as one bf16 pass (jax.default_matmul_precision docs).
    double peak_flops_for(core::DType dtype) const;
    bool operator==(const ChipSpec&) const = default;
};

}  // namespace podsim::hardware
