#include "hardware/chip_spec.hpp"

namespace podsim::hardware {

double ChipSpec::peak_flops_for(core::DType dtype) const {
    if (auto it = peak_flops.find(dtype); it != peak_flops.end()) return it->second;
    if (auto it = peak_flops.find(core::DType::bf16); it != peak_flops.end()) return it->second;
    if (!peak_flops.empty()) return peak_flops.begin()->second;
    return 0.0;
}

}  // namespace podsim::hardware
