#pragma once

#include <map>
#include <string>

#include "core/dtype.hpp"

namespace podsim::hardware {

// One accelerator chip as the cost model sees it.
struct ChipSpec {
    std::string name;
    std::map<core::DType, double> peak_flops;  // FLOP/s per chip, by operand dtype
    double hbm_capacity = 0.0;                 // bytes
    double hbm_bandwidth = 0.0;                // bytes/s
    int mxu_tile = 128;                        // systolic array side, elements
    int tensorcores = 1;                       // per chip (one JAX device per chip on v4/v5p: megacore)

    // Peak for matmuls whose operands have `dtype`. fp32 matmuls fall back to the bf16 peak, since
    // XLA's default precision on TPU runs them as one bf16 pass (jax.default_matmul_precision docs).
    double peak_flops_for(core::DType dtype) const;
};

}  // namespace podsim::hardware
