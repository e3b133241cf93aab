#include "core/suggest.hpp"

#include <algorithm>
#include <cctype>

namespace podsim::core {

namespace {

char lower(char c) {
    return static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
}

// Levenshtein distance, or any value above `limit` as soon as every entry of a row is above it (the
// distance can only grow from there).
std::size_t bounded_edit_distance(std::string_view a, std::string_view b, std::size_t limit) {
    // One row of the dynamic programme; on the stack for the short words keys are.
    constexpr std::size_t kInline = 64;
    std::size_t inline_row[kInline + 1];
    std::vector<std::size_t> heap_row;
    std::size_t* row = inline_row;
    if (b.size() > kInline) {
        heap_row.resize(b.size() + 1);
        row = heap_row.data();
    }
    std::string lower_b(b.size(), '\0');
    std::transform(b.begin(), b.end(), lower_b.begin(), lower);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        const char ai = lower(a[i - 1]);
        for (std::size_t j = 1; j <= b.size(); ++j) {
            std::size_t above = row[j];
            const std::size_t substitute = diagonal + (ai == lower_b[j - 1] ? 0 : 1);
            row[j] = std::min(std::min(row[j] + 1, row[j - 1] + 1), substitute);
            diagonal = above;
        }
        if (*std::min_element(row, row + b.size() + 1) > limit) return limit + 1;
    }
    return row[b.size()];
}

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
    return bounded_edit_distance(a, b, std::max(a.size(), b.size()));
}

std::optional<std::string> closest_match(std::string_view word, const std::vector<std::string>& candidates) {
    std::optional<std::string> best;
    std::size_t best_distance = 0;
    // A typo changes about a third of a word at most; beyond that a hint would mislead.
    std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
    for (const auto& candidate : candidates) {
        // The distance is at least the difference in length: no need to compute it beyond the limit.
        const std::size_t length_gap =
            word.size() > candidate.size() ? word.size() - candidate.size() : candidate.size() - word.size();
        if (length_gap > limit) continue;
        std::size_t d = bounded_edit_distance(word, candidate, limit);
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

namespace {

// The runs of digits of a name, in order: "llama3-8b" -> {"3", "8"}.
std::vector<std::string_view> numbers(std::string_view word) {
    std::vector<std::string_view> out;
    std::size_t i = 0;
    while (i < word.size()) {
        if (!std::isdigit(static_cast<unsigned char>(word[i]))) {
            ++i;
            continue;
        }
        std::size_t j = i;
        while (j < word.size() && std::isdigit(static_cast<unsigned char>(word[j]))) ++j;
        out.push_back(word.substr(i, j - i));
        i = j;
    }
    return out;
}

}  // namespace

std::optional<std::string> closest_name(std::string_view word, const std::vector<std::string>& candidates) {
    const auto own = numbers(word);
    std::vector<std::string> same_numbers;
    for (const auto& c : candidates) {
        if (numbers(c) == own) same_numbers.push_back(c);
    }
    return closest_match(word, same_numbers);
}

}  // namespace podsim::core
