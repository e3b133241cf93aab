#include "workload/op_graph.hpp"

#include <algorithm>
#include <mutex>

#include <boost/graph/compressed_sparse_row_graph.hpp>

#include "core/assert.hpp"

namespace podsim::workload {

struct OpGraph::Derived {
    std::once_flag once;
    bool done = false;
    std::vector<int> order;
    // The predecessors of every op, one after the other, each op's in the order its edges were first
    // added: those of op i from predecessor_begin[i] to predecessor_begin[i + 1]. Flat, so walking
    // them for every op of a step stays in cache.
    std::vector<std::size_t> predecessor_begin;
    std::vector<int> predecessor_ids;
};

OpGraph::OpGraph() : derived_(std::make_unique<Derived>()) {}
OpGraph::~OpGraph() = default;
OpGraph::OpGraph(const OpGraph& other)
    : param_groups(other.param_groups),
      layers(other.layers),
      ops_(other.ops_),
      edges_(other.edges_),
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
    return static_cast<int>(ops_.size()) - 1;
}

void OpGraph::add_edge(int from, int to) {
    PODSIM_ASSERT(
        from >= 0 && to >= 0 && from != to && static_cast<std::size_t>(std::max(from, to)) < ops_.size(),
        "bad op edge");
    if (derived_->done) derived_ = std::make_unique<Derived>();
    edges_.emplace_back(from, to);
}

std::vector<int> OpGraph::predecessors(int index) const {
    auto view = predecessors_view(index);
    return {view.begin(), view.end()};
}

std::size_t OpGraph::edge_count() const {
    return derived().predecessor_ids.size();
}

const OpGraph::Derived& OpGraph::derived() const {
    std::call_once(derived_->once, [this] {
        Derived& d = *derived_;
        const std::size_t n = ops_.size();
        // Each op's inputs in the order their edges were added, a repeated edge once: the edges
        // bucketed by target (a counting sort keeps each bucket in insertion order).
        std::vector<std::size_t> bucket_begin(n + 1, 0);
        for (const auto& [from, to] : edges_) ++bucket_begin[static_cast<std::size_t>(to) + 1];
        for (std::size_t v = 0; v < n; ++v) bucket_begin[v + 1] += bucket_begin[v];
        std::vector<int> sources(edges_.size());
        {
            std::vector<std::size_t> next(bucket_begin.begin(), bucket_begin.end() - 1);
            for (const auto& [from, to] : edges_) sources[next[static_cast<std::size_t>(to)]++] = from;
        }
        d.predecessor_begin.assign(n + 1, 0);
        d.predecessor_ids.reserve(edges_.size());
        std::vector<std::pair<std::size_t, std::size_t>> unique_edges;
        unique_edges.reserve(edges_.size());
        for (std::size_t v = 0; v < n; ++v) {
            d.predecessor_begin[v] = d.predecessor_ids.size();
            for (std::size_t e = bucket_begin[v]; e < bucket_begin[v + 1]; ++e) {
                const auto first =
                    d.predecessor_ids.begin() + static_cast<std::ptrdiff_t>(d.predecessor_begin[v]);
                if (std::find(first, d.predecessor_ids.end(), sources[e]) != d.predecessor_ids.end())
                    continue;
                d.predecessor_ids.push_back(sources[e]);
                unique_edges.emplace_back(static_cast<std::size_t>(sources[e]), v);
            }
        }
        d.predecessor_begin[n] = d.predecessor_ids.size();
        const boost::compressed_sparse_row_graph<boost::directedS> graph(
            boost::edges_are_unsorted_multi_pass, unique_edges.begin(), unique_edges.end(), n);

        // The stable order Kahn's algorithm gives with a min-index ready set. It also proves the graph
        // acyclic: an op on a cycle never becomes ready, so the order comes out incomplete.
        std::vector<int> pending(n, 0);
        for (std::size_t v = 0; v < n; ++v)
            pending[v] = static_cast<int>(d.predecessor_begin[v + 1] - d.predecessor_begin[v]);
        d.order.reserve(n);
        std::vector<std::size_t> ready;
        for (std::size_t v = 0; v < n; ++v) {
            if (pending[v] == 0) ready.push_back(v);
        }
        // ready kept sorted descending so that back() is the smallest index.
        std::sort(ready.rbegin(), ready.rend());
        while (!ready.empty()) {
            std::size_t v = ready.back();
            ready.pop_back();
            d.order.push_back(static_cast<int>(v));
            auto [begin, end] = boost::out_edges(v, graph);
            for (auto it = begin; it != end; ++it) {
                std::size_t w = boost::target(*it, graph);
                if (--pending[w] == 0) {
                    ready.insert(std::upper_bound(ready.begin(), ready.end(), w, std::greater<>()), w);
                }
            }
        }
        PODSIM_ASSERT(d.order.size() == n, "op graph has a cycle");
        d.done = true;
    });
    return *derived_;
}

const std::vector<int>& OpGraph::topological_order() const {
    return derived().order;
}

OpGraph::PredecessorLists OpGraph::predecessor_lists() const {
    const Derived& d = derived();
    return {d.predecessor_begin, d.predecessor_ids};
}

std::span<const int> OpGraph::predecessors_view(int index) const {
    const Derived& d = derived();
    const auto i = static_cast<std::size_t>(index);
    return std::span<const int>(d.predecessor_ids)
        .subspan(d.predecessor_begin[i], d.predecessor_begin[i + 1] - d.predecessor_begin[i]);
}

}  // namespace podsim::workload
