#include "parallel/program_names.hpp"

#include <string>

namespace podsim::parallel {
namespace {

std::string_view text(OpSuffix suffix) {
    constexpr std::array<std::string_view, static_cast<std::size_t>(OpSuffix::count)> texts = {
        "", ".cm", ".all-gather", ".reduce-scatter", ".all-reduce", ".collective-permute"};
    return texts[static_cast<std::size_t>(suffix)];
}

std::string_view text(GroupSuffix suffix) {
    constexpr std::array<std::string_view, static_cast<std::size_t>(GroupSuffix::count)> texts = {
        ".all-gather.fwd",     ".all-gather.bwd",      ".reduce-scatter",
        ".all-reduce",         ".all-reduce.dcn",      ".all-reduce.stages",
        ".all-reduce.experts", ".reduce-scatter.data", ".all-gather.data"};
    return texts[static_cast<std::size_t>(suffix)];
}

}  // namespace

ProgramNames::ProgramNames(const workload::OpGraph& graph) : graph_(graph) {
    for (auto& names : op_names_) names.resize(graph.size());
    for (auto& names : group_names_) names.resize(graph.param_groups.size());
}

std::string_view ProgramNames::store_op(int graph_op, OpSuffix suffix) {
    return store_->add(graph_.op(graph_op).name + std::string(text(suffix)));
}

std::string_view ProgramNames::group(int group, GroupSuffix suffix) {
    auto& name = group_names_[static_cast<std::size_t>(suffix)][static_cast<std::size_t>(group)];
    if (name.empty())
        name = store_->add(graph_.param_groups[static_cast<std::size_t>(group)].name +
                           std::string(text(suffix)));
    return name;
}

std::string_view ProgramNames::copy(std::string_view source, bool to_host) {
    auto [it, added] = copy_names_.try_emplace({source.data(), to_host});
    if (added) it->second = store_->add(std::string(source) + (to_host ? ".offload" : ".reload"));
    return it->second;
}

}  // namespace podsim::parallel
