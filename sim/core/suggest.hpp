#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace podsim::core {

// Levenshtein distance (insert, delete, substitute), for "did you mean" hints.
std::size_t edit_distance(std::string_view a, std::string_view b);

// The candidate closest to `word`, if close enough to be a plausible typo, or else the one candidate
// that is `word` with a dash-separated prefix (`v4` -> `tpu-v4`).
std::optional<std::string> closest_match(std::string_view word, const std::vector<std::string>& candidates);

// closest_match among names that carry versions and sizes (tpu-v4, gpt2-2b, llama3-8b): only
// candidates with the same numbers as `word`, since a different number names another thing
// (tpu-v7x is no typo of tpu-v2).
std::optional<std::string> closest_name(std::string_view word, const std::vector<std::string>& candidates);

}  // namespace podsim::core
