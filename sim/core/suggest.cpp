#include "core/suggest.hpp"

#include <algorithm>
#include <cctype>

namespace podsim::core {

std::size_t edit_distance(std::string_view a, std::string_view b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t above = row[j];
            bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

std::optional<std::string> closest_match(std::string_view word, const std::vector<std::string>& candidates) {
    std::optional<std::string> best;
    std::size_t best_distance = 0;
    // A typo changes about a third of a word at most; beyond that a hint would mislead.
    std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
    for (const auto& candidate : candidates) {
        std::size_t d = edit_distance(word, candidate);
        if (d <= limit && (!best || d < best_distance)) {
            best = candidate;
            best_distance = d;
        }
    }
    if (best || word.size() < 2) return best;
    // A name given without its family prefix: `v4` for `tpu-v4`, `2b` for `gpt2-2b`, when only one
    // candidate ends that way.
    for (const auto& candidate : candidates) {
        if (candidate.size() > word.size() && candidate.ends_with(word) &&
            candidate[candidate.size() - word.size() - 1] == '-') {
            if (best) return std::nullopt;
            best = candidate;
        }
    }
    return best;
}

}  // namespace podsim::core
