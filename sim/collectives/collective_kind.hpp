#pragma once

#include <optional>
#include <string_view>

namespace podsim::collectives {

enum class CollectiveKind { all_gather, reduce_scatter, all_reduce, all_to_all, collective_permute };

std::string_view collective_name(CollectiveKind kind);  // "all-gather", ... as XLA names them
std::optional<CollectiveKind> parse_collective(std::string_view name);

}  // namespace podsim::collectives
