#include "workload/op_graph.hpp"

#include <boost/graph/adjacency_list.hpp>

#include "core/assert.hpp"

#include <mutex>

namespace podsim::workload {

struct OpGraph::Graph {
    // The graph-wide edge list in a vector, not Boost's default list: ops and edges are only ever
    // added, and a list node per edge was one allocation per edge of every lowered step.
    boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS, boost::no_property,
                          boost::no_property, boost::no_property, boost::vecS>
        g;
};

struct OpGraph::Derived {
    std::once_flag once;
    bool done = false;
    std::vector<int> order;
    // predecessors() of every op, one after the other: those of op i from predecessor_begin[i] to
    // predecessor_begin[i + 1]. Flat, so walking them for every op of a step stays in cache.
    std::vector<std::size_t> predecessor_begin;
    std::vector<int> predecessor_ids;
};

OpGraph::OpGraph() : graph_(std::make_unique<Graph>()), derived_(std::make_unique<Derived>()) {}
OpGraph::~OpGraph() = default;
OpGraph::OpGraph(const OpGraph& other)
    : param_groups(other.param_groups),
      layers(other.layers),
      tokens_per_microbatch(other.tokens_per_microbatch),
      ops_(other.ops_),
      graph_(std::make_unique<Graph>(*other.graph_)),
      derived_(std::make_unique<Derived>()) {}
OpGraph& OpGraph::operator=(const OpGraph& other) {
    if (this != &other) {
        OpGraph copy(other);
        *this = std::move(copy);
    }
    return *this;
}
OpGraph::OpGraph(OpGraph&&) noexcept = default;
OpGraph& OpGraph::operator=(OpGraph&&) noexcept = default;

int OpGraph::add_op(Op op) {
    if (derived_->done) derived_ = std::make_unique<Derived>();  // the graph changed: computed again
    ops_.push_back(std::move(op));
    auto v = boost::add_vertex(graph_->g);
    PODSIM_ASSERT(static_cast<std::size_t>(v) + 1 == ops_.size(), "vertex and op indices diverged");
    return static_cast<int>(v);
}

void OpGraph::add_edge(int from, int to) {
    PODSIM_ASSERT(from >= 0 && to >= 0 && from != to, "bad op edge");
    if (boost::edge(static_cast<std::size_t>(from), static_cast<std::size_t>(to), graph_->g).second) return;
    if (derived_->done) derived_ = std::make_unique<Derived>();
    boost::add_edge(static_cast<std::size_t>(from), static_cast<std::size_t>(to), graph_->g);
}

std::vector<int> OpGraph::predecessors(int index) const {
    std::vector<int> out;
    auto [begin, end] = boost::in_edges(static_cast<std::size_t>(index), graph_->g);
    for (auto it = begin; it != end; ++it) out.push_back(static_cast<int>(boost::source(*it, graph_->g)));
    return out;
}

std::size_t OpGraph::edge_count() const {
    return boost::num_edges(graph_->g);
}

const std::vector<int>& OpGraph::topological_order() const {
    std::call_once(derived_->once, [this] {
        derived_->order = compute_topological_order();
        derived_->predecessor_begin.reserve(ops_.size() + 1);
        derived_->predecessor_ids.reserve(edge_count());
        for (std::size_t i = 0; i < ops_.size(); ++i) {
            derived_->predecessor_begin.push_back(derived_->predecessor_ids.size());
            auto [begin, end] = boost::in_edges(i, graph_->g);
            for (auto it = begin; it != end; ++it)
                derived_->predecessor_ids.push_back(static_cast<int>(boost::source(*it, graph_->g)));
        }
        derived_->predecessor_begin.push_back(derived_->predecessor_ids.size());
        derived_->done = true;
    });
    return derived_->order;
}

std::span<const int> OpGraph::predecessors_view(int index) const {
    (void)topological_order();
    const auto i = static_cast<std::size_t>(index);
    const auto& begin = derived_->predecessor_begin;
    return std::span<const int>(derived_->predecessor_ids).subspan(begin[i], begin[i + 1] - begin[i]);
}

std::vector<int> OpGraph::compute_topological_order() const {
    // The stable order Kahn's algorithm gives with a min-index ready set. It also proves the graph
    // acyclic: an op on a cycle never becomes ready, so the order comes out incomplete.
    std::vector<int> pending(ops_.size(), 0);
    for (std::size_t v = 0; v < ops_.size(); ++v) {
        pending[v] = static_cast<int>(boost::in_degree(v, graph_->g));
    }
    std::vector<int> order;
    order.reserve(ops_.size());
    std::vector<std::size_t> ready;
    for (std::size_t v = 0; v < ops_.size(); ++v) {
        if (pending[v] == 0) ready.push_back(v);
    }
    // ready kept sorted descending so that back() is the smallest index.
    std::sort(ready.rbegin(), ready.rend());
    while (!ready.empty()) {
        std::size_t v = ready.back();
        ready.pop_back();
        order.push_back(static_cast<int>(v));
        auto [begin, end] = boost::out_edges(v, graph_->g);
        for (auto it = begin; it != end; ++it) {
            std::size_t w = boost::target(*it, graph_->g);
            if (--pending[w] == 0) {
                ready.insert(std::upper_bound(ready.begin(), ready.end(), w, std::greater<>()), w);
            }
        }
    }
    PODSIM_ASSERT(order.size() == ops_.size(), "op graph has a cycle");
    return order;
}

}  // namespace podsim::workload
