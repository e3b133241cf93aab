#pragma once

#include <array>
#include <map>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "parallel/name_store.hpp"
#include "workload/op_graph.hpp"

namespace podsim::parallel {

// What a device op's name adds to its graph op's name, or to its parameter group's.
enum class OpSuffix { none, continuation, all_gather, reduce_scatter, all_reduce, collective_permute, count };
enum class GroupSuffix {
    all_gather_fwd,
    all_gather_bwd,
    reduce_scatter,
    all_reduce,
    all_reduce_dcn,
    all_reduce_stages,
    all_reduce_experts,
    reduce_scatter_data,
    all_gather_data,
    count
};

// The names of the device ops partitioned from one lowered step: a graph op's or a parameter
// group's name with a suffix, each stored once when first asked for. Every program partitioned
// from the same graph can share one (a sweep partitions one lowered step over many meshes and
// runtimes); the programs keep the store alive, so their names outlive this object.
class ProgramNames {
  public:
    explicit ProgramNames(const workload::OpGraph& graph);

    const workload::OpGraph& graph() const { return graph_; }
    std::string_view op(int graph_op, OpSuffix suffix) {
        std::string_view& name =
            op_names_[static_cast<std::size_t>(suffix)][static_cast<std::size_t>(graph_op)];
        if (name.empty()) name = store_op(graph_op, suffix);
        return name;
    }
    std::string_view group(int group, GroupSuffix suffix);
    // The name of a copy to or from host memory of the op named `source` (a name of this store).
    std::string_view copy(std::string_view source, bool to_host);
    const std::shared_ptr<NameStore>& store() const { return store_; }

  private:
    std::string_view store_op(int graph_op, OpSuffix suffix);

    const workload::OpGraph& graph_;
    std::shared_ptr<NameStore> store_ = std::make_shared<NameStore>();
    // Empty where not stored yet.
    std::array<std::vector<std::string_view>, static_cast<std::size_t>(OpSuffix::count)> op_names_;
    std::array<std::vector<std::string_view>, static_cast<std::size_t>(GroupSuffix::count)> group_names_;
    std::map<std::pair<const char*, bool>, std::string_view> copy_names_;
};

}  // namespace podsim::parallel
