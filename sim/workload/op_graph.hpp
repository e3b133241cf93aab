#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "workload/op.hpp"

namespace podsim::workload {

// Parameters that are gathered, reduced and updated together (one FSDP unit).
struct ParamGroup {
    std::string name;
    int layer = -1;
    std::int64_t params = 0;
    bool tensor_sharded = false;  // split over the tensor axis (transformer blocks)
    // Matrix shapes (rows, cols), for Adafactor's factored second moment.
    std::vector<std::pair<std::int64_t, std::int64_t>> matrices;
    // Of `params`, the routed experts' (an MoE layer): split over the expert axis too.
    std::int64_t expert_params = 0;
    // Its large weight is read by one weight matmul only (an untied output layer, a classifier), so
    // its gradient is that matmul's weight-gradient output.
    bool gradient_is_dot_output = false;
};

// The ops of one training step (one microbatch's forward and backward, then the optimizer) as a
// DAG. Edges are data dependencies. They are recorded as added and, once the graph is read, built
// into a Boost.Graph compressed sparse row graph (one allocation for all of them, not three vectors
// grown per edge: edges were a third of lowering a step).
class OpGraph {
  public:
    OpGraph();
    ~OpGraph();
    OpGraph(const OpGraph& other);
    OpGraph& operator=(const OpGraph& other);
    OpGraph(OpGraph&&) noexcept;
    OpGraph& operator=(OpGraph&&) noexcept;

    int add_op(Op op);
    void add_edge(int from, int to);

    std::size_t size() const { return ops_.size(); }
    const Op& op(int index) const { return ops_[static_cast<std::size_t>(index)]; }
    Op& op(int index) { return ops_[static_cast<std::size_t>(index)]; }
    const std::vector<Op>& ops() const { return ops_; }
    std::vector<int> predecessors(int index) const;
    std::size_t edge_count() const;

    // Ops in an order where every op follows its inputs; ties keep insertion order, which is the
    // order XLA's sequential schedule would run them. Asserts that the graph is acyclic. Computed
    // once per graph (the first call; thread-safe), since every partition of a shared graph needs it.
    const std::vector<int>& topological_order() const;
    // predecessors() of op `index`, computed with the order, without allocating.
    std::span<const int> predecessors_view(int index) const;
    // Every op's predecessors, for passes over many ops: of(i) is predecessors_view(i), inline.
    struct PredecessorLists {
        std::span<const std::size_t> begin;  // op i's are ids[begin[i], begin[i + 1])
        std::span<const int> ids;
        std::span<const int> of(int index) const {
            const auto i = static_cast<std::size_t>(index);
            return ids.subspan(begin[i], begin[i + 1] - begin[i]);
        }
    };
    PredecessorLists predecessor_lists() const;

    std::vector<ParamGroup> param_groups;
    int layers = 0;

  private:
    struct Derived;
    const Derived& derived() const;
    std::vector<Op> ops_;
    std::vector<std::pair<int, int>> edges_;  // (from, to) as added, repeats included
    std::unique_ptr<Derived> derived_;        // what is computed from the finished graph, once
};

}  // namespace podsim::workload
