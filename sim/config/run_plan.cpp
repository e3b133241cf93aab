#include "config/run_plan.hpp"

#include <array>

namespace podsim::config {
namespace {

// Names from the key declarations' tables (whole_run_keys.hpp), indexed by enum value.
template <typename E, std::size_t N>
std::optional<E> parse(const std::array<std::string_view, N>& names, std::string_view text) {
    for (std::size_t i = 0; i < N; ++i) {
        if (names[i] == text) return static_cast<E>(i);
    }
    return std::nullopt;
}

template <typename E, std::size_t N>
std::string_view name_of(const std::array<std::string_view, N>& names, E value) {
    const auto i = static_cast<std::size_t>(value);
    return i < N ? names[i] : "?";
}

}  // namespace

std::string_view overlap_name(Overlap overlap) {
    return name_of(kOverlapNames, overlap);
}
std::optional<Overlap> parse_overlap(std::string_view text) {
    return parse<Overlap>(kOverlapNames, text);
}
std::string_view padding_name(Padding padding) {
    return name_of(kPaddingNames, padding);
}
std::optional<Padding> parse_padding(std::string_view text) {
    return parse<Padding>(kPaddingNames, text);
}
std::string_view accumulate_name(Accumulate accumulate) {
    return name_of(kAccumulateNames, accumulate);
}
std::optional<Accumulate> parse_accumulate(std::string_view text) {
    return parse<Accumulate>(kAccumulateNames, text);
}
std::string_view compile_cache_name(CompileCache cache) {
    return name_of(kCompileCacheNames, cache);
}
std::optional<CompileCache> parse_compile_cache(std::string_view text) {
    return parse<CompileCache>(kCompileCacheNames, text);
}
std::string_view distribution_name(LengthDistribution distribution) {
    return name_of(kDistributionNames, distribution);
}
std::optional<LengthDistribution> parse_distribution(std::string_view text) {
    return parse<LengthDistribution>(kDistributionNames, text);
}

}  // namespace podsim::config
