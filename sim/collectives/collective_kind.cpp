#include "collectives/collective_kind.hpp"

namespace podsim::collectives {

std::string_view collective_name(CollectiveKind kind) {
    switch (kind) {
        case CollectiveKind::all_gather:
            return "all-gather";
        case CollectiveKind::reduce_scatter:
            return "reduce-scatter";
        case CollectiveKind::all_reduce:
            return "all-reduce";
        case CollectiveKind::all_to_all:
            return "all-to-all";
        case CollectiveKind::collective_permute:
            return "collective-permute";
    }
    return "?";
}

std::optional<CollectiveKind> parse_collective(std::string_view name) {
    for (auto k : {CollectiveKind::all_gather, CollectiveKind::reduce_scatter, CollectiveKind::all_reduce,
                   CollectiveKind::all_to_all, CollectiveKind::collective_permute}) {
        if (collective_name(k) == name) return k;
    }
    return std::nullopt;
}

}  // namespace podsim::collectives
