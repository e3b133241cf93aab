#include "workload/training_spec.hpp"

namespace podsim::workload {

std::string_view optimizer_name(Optimizer optimizer) {
    return kOptimizerNames[static_cast<std::size_t>(optimizer)];
}

std::string_view remat_name(Remat remat) {
    return kRematNames[static_cast<std::size_t>(remat)];
}

}  // namespace podsim::workload
