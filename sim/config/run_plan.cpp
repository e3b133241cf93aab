#include "config/run_plan.hpp"

#include <array>
#include <utility>

namespace podsim::config {
namespace {

template <typename E, std::size_t N>
std::optional<E> parse(const std::array<std::pair<E, std::string_view>, N>& names, std::string_view text) {
    for (const auto& [value, name] : names) {
        if (name == text) return value;
    }
    return std::nullopt;
}

template <typename E, std::size_t N>
std::string_view name_of(const std::array<std::pair<E, std::string_view>, N>& names, E value) {
    for (const auto& [v, name] : names) {
        if (v == value) return name;
    }
    return "?";
}

constexpr std::array<std::pair<Overlap, std::string_view>, 3> kOverlap{{
    {Overlap::none, "none"},
    {Overlap::run_post_order, "run_post_order"},
    {Overlap::run_post_order_and_fetch, "run_post_order_and_fetch"},
}};
constexpr std::array<std::pair<Padding, std::string_view>, 3> kPadding{{
    {Padding::none, "none"},
    {Padding::bucket, "bucket"},
    {Padding::max, "max"},
}};
constexpr std::array<std::pair<Accumulate, std::string_view>, 3> kAccumulate{{
    {Accumulate::none, "none"},
    {Accumulate::device, "device"},
    {Accumulate::host, "host"},
}};
constexpr std::array<std::pair<CompileCache, std::string_view>, 2> kCache{{
    {CompileCache::process, "process"},
    {CompileCache::persistent, "persistent"},
}};
constexpr std::array<std::pair<LengthDistribution, std::string_view>, 4> kDistribution{{
    {LengthDistribution::fixed, "fixed"},
    {LengthDistribution::uniform, "uniform"},
    {LengthDistribution::normal, "normal"},
    {LengthDistribution::buckets, "buckets"},
}};

}  // namespace

std::string_view overlap_name(Overlap overlap) {
    return name_of(kOverlap, overlap);
}
std::optional<Overlap> parse_overlap(std::string_view text) {
    return parse(kOverlap, text);
}
std::string_view padding_name(Padding padding) {
    return name_of(kPadding, padding);
}
std::optional<Padding> parse_padding(std::string_view text) {
    return parse(kPadding, text);
}
std::string_view accumulate_name(Accumulate accumulate) {
    return name_of(kAccumulate, accumulate);
}
std::optional<Accumulate> parse_accumulate(std::string_view text) {
    return parse(kAccumulate, text);
}
std::string_view compile_cache_name(CompileCache cache) {
    return name_of(kCache, cache);
}
std::optional<CompileCache> parse_compile_cache(std::string_view text) {
    return parse(kCache, text);
}
std::string_view distribution_name(LengthDistribution distribution) {
    return name_of(kDistribution, distribution);
}
std::optional<LengthDistribution> parse_distribution(std::string_view text) {
    return parse(kDistribution, text);
}

}  // namespace podsim::config
