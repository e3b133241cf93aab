#include "parallel/device_program.hpp"

#include "parallel/runtime_spec.hpp"

namespace podsim::parallel {

std::string_view category_name(OpCategory category) {
    switch (category) {
        case OpCategory::matmul:
            return "matmul";
        case OpCategory::fusion:
            return "fusion";
        case OpCategory::all_gather:
            return "all-gather";
        case OpCategory::reduce_scatter:
            return "reduce-scatter";
        case OpCategory::all_reduce:
            return "all-reduce";
        case OpCategory::all_to_all:
            return "all-to-all";
        case OpCategory::collective_permute:
            return "collective-permute";
        case OpCategory::host:
            return "host";
        case OpCategory::copy:
            return "copy";
    }
    return "?";
}

OpCategory category_of(collectives::CollectiveKind kind) {
    switch (kind) {
        case collectives::CollectiveKind::all_gather:
            return OpCategory::all_gather;
        case collectives::CollectiveKind::reduce_scatter:
            return OpCategory::reduce_scatter;
        case collectives::CollectiveKind::all_reduce:
            return OpCategory::all_reduce;
        case collectives::CollectiveKind::all_to_all:
            return OpCategory::all_to_all;
        case collectives::CollectiveKind::collective_permute:
            return OpCategory::collective_permute;
    }
    return OpCategory::all_reduce;
}

std::string_view framework_name(Framework framework) {
    return kFrameworkNames[static_cast<std::size_t>(framework)];
}

}  // namespace podsim::parallel
