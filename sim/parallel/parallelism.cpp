#include "parallel/parallelism.hpp"

#include <fmt/format.h>

#include "core/assert.hpp"

namespace podsim::parallel {

const ParallelismKind* parallelism_named(std::string_view name) {
    for (const auto& kind : kParallelisms)
        if (kind.name == name) return &kind;
    return nullptr;
}

const ParallelismKind* parallelism_of_maxtext_key(std::string_view key, bool* dcn) {
    for (const auto& kind : kParallelisms) {
        if (kind.maxtext_ici == key || kind.maxtext_dcn == key) {
            if (dcn) *dcn = kind.maxtext_dcn == key;
            return &kind;
        }
    }
    return nullptr;
}

namespace {

// The product of the sizes of the axes in `axes` called `name` (compared in place: no string is
// built per lookup).
long product_of(const std::vector<network::MeshAxis>& axes, std::string_view name) {
    long n = 1;
    for (const auto& a : axes)
        if (a.name == name) n *= a.size;
    return n;
}

}  // namespace

long axis_size(const network::MeshSpec& mesh, Parallelism kind) {
    const std::string_view name = parallelism(kind).name;
    return product_of(mesh.ici, name) * product_of(mesh.dcn, name);
}

long ici_axis_size(const network::MeshSpec& mesh, Parallelism kind) {
    return product_of(mesh.ici, parallelism(kind).name);
}

long divisor(const network::MeshSpec& mesh, workload::Shard role) {
    long n = 1;
    for (const auto& kind : kParallelisms)
        if (splits(kind, role)) n *= axis_size(mesh, kind.kind);
    return n;
}

ParamSplit param_split(const network::MeshSpec& mesh) {
    ParamSplit split;
    for (const auto& kind : kParallelisms) {
        if (!splits(kind, workload::Shard::param)) continue;
        const long size = axis_size(mesh, kind.kind);
        split.divisor_tensor_sharded *= size;
        if (!splits(kind, workload::Shard::tensor)) split.divisor_unsharded *= size;
    }
    split.experts = divisor(mesh, workload::Shard::expert);
    return split;
}

double ParamSplit::shard(const workload::ParamGroup& group) const {
    const auto d = static_cast<double>(divisor(group));
    if (group.expert_params == 0) return static_cast<double>(group.params) / d;
    return static_cast<double>(group.params - group.expert_params) / d +
           static_cast<double>(group.expert_params) / (d * static_cast<double>(experts));
}

std::string split_by_text(workload::Shard role) {
    std::string out;
    for (const auto& kind : kParallelisms) {
        if (!splits(kind, role)) continue;
        if (!out.empty()) out += " x ";
        out += kind.name;
    }
    return out;
}

std::vector<std::string> maxtext_keys() {
    std::vector<std::string> keys;
    for (const auto& kind : kParallelisms) {
        keys.emplace_back(kind.maxtext_ici);
        keys.emplace_back(kind.maxtext_dcn);
    }
    return keys;
}

std::vector<std::string> axis_names() {
    std::vector<std::string> names;
    for (const auto& kind : kParallelisms) names.emplace_back(kind.name);
    return names;
}

std::string axis_names_text() {
    const auto names = axis_names();
    std::string out;
    for (std::size_t i = 0; i < names.size(); ++i) {
        if (i > 0) out += i + 1 == names.size() ? " and " : ", ";
        out += names[i];
    }
    return out;
}

std::vector<std::string> dcn_axis_names() {
    std::vector<std::string> names;
    for (const auto& kind : kParallelisms)
        if (kind.across_slices) names.emplace_back(kind.name);
    return names;
}

const ParallelismKind& kind_inserting(CollectiveRule rule) {
    for (const auto& kind : kParallelisms)
        if (inserts(kind, rule)) return kind;
    PODSIM_ASSERT(false, "a collective rule no parallelism kind inserts");
    return kParallelisms[0];
}

std::string explain_parallelism() {
    std::string out = "parallelism kinds — the axes of a run config's `mesh`\n\n";
    for (const auto& kind : kParallelisms) {
        out +=
            fmt::format("  {:<10} MaxText axis `{}`: {}{}\n", kind.name, kind.maxtext_axis, kind.maxtext_ici,
                        kind.across_slices ? fmt::format(", {}", kind.maxtext_dcn) : std::string());
        out += fmt::format("  {:<10} splits: {}\n", "", kind.splits_text);
        out += fmt::format("  {:<10} collectives: {}\n", "", kind.collectives_text);
        out += fmt::format("  {:<10} source: {}\n", "", kind.source);
    }
    return out;
}

}  // namespace podsim::parallel
