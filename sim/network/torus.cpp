#include "network/torus.hpp"

#include <algorithm>
#include <mutex>
#include <queue>

#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/breadth_first_search.hpp>

#include "core/assert.hpp"

namespace podsim::network {

// Built on first use: only hop counts need it, and a step simulation never asks for them, while
// building (and freeing) it for PaLM's 3,072-chip slice cost three times the rest of the torus.
struct Torus::Graph {
    std::once_flag built;
    boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, boost::no_property,
                          boost::property<boost::edge_index_t, int>>
        g;
};

std::vector<double> effective_link_bandwidth(const Torus& torus, double ici_link_efficiency) {
    std::vector<double> out;
    out.reserve(torus.links().size());
    for (const auto& link : torus.links()) {
        out.push_back(link.intra_chip ? link.bandwidth : link.bandwidth * ici_link_efficiency);
    }
    return out;
}

bool twistable(const hardware::SliceShape& slice) {
    std::vector<int> d = slice.dims;
    if (d.size() != 3) return false;
    std::sort(d.begin(), d.end());
    int n = d[0];
    if (n < 4) return false;
    return (d[1] == n && d[2] == 2 * n) || (d[1] == 2 * n && d[2] == 2 * n);
}

Torus::Torus(const hardware::TopologySpec& topology, const hardware::SliceShape& slice, bool twisted)
    : graph_(std::make_unique<Graph>()) {
    const hardware::SliceShape chips_shape = hardware::normalized_slice(topology, slice);
    hardware::SliceShape s = hardware::device_grid(topology, slice);
    shape_ = s.dims;
    intra_chip_dim_ = hardware::intra_chip_dimension(topology);
    const int dims = static_cast<int>(shape_.size());
    for (int d = 0; d < dims; ++d) {
        wraps_.push_back(hardware::dimension_wraps(topology, chips_shape, static_cast<std::size_t>(d)));
    }
    twisted_ = twisted && topology.ici.twisted_torus && twistable(chips_shape);
    const int chips = static_cast<int>(s.chips());
    coords_.resize(static_cast<std::size_t>(chips));
    for (int c = 0; c < chips; ++c) {
        int rest = c;
        Coord coord{0, 0, 0, 0};
        for (int d = 0; d < dims; ++d) {
            coord[static_cast<std::size_t>(d)] = rest % shape_[static_cast<std::size_t>(d)];
            rest /= shape_[static_cast<std::size_t>(d)];
        }
        coords_[static_cast<std::size_t>(c)] = coord;
    }
    const auto chip_dims_end = shape_.begin() + static_cast<long>(chips_shape.dims.size());
    int longest = static_cast<int>(std::max_element(shape_.begin(), chip_dims_end) - shape_.begin());
    link_index_.assign(static_cast<std::size_t>(chips * dims * 2), -1);
    for (int c = 0; c < chips; ++c) {
        for (int d = 0; d < dims; ++d) {
            const int length = shape_[static_cast<std::size_t>(d)];
            if (length <= 1) continue;
            for (int direction : {+1, -1}) {
                Coord next = coords_[static_cast<std::size_t>(c)];
                int position = next[static_cast<std::size_t>(d)] + direction;
                bool wrap = position < 0 || position >= length;
                if (wrap && !wraps_[static_cast<std::size_t>(d)]) continue;
                next[static_cast<std::size_t>(d)] = (position + length) % length;
                if (wrap && twisted_ && d != longest && d != intra_chip_dim_) {
                    // Twisted wraparound: shift half-way along the longest dimension.
                    auto& along = next[static_cast<std::size_t>(longest)];
                    along = (along + direction * shape_[static_cast<std::size_t>(longest)] / 2 +
                             shape_[static_cast<std::size_t>(longest)]) %
                            shape_[static_cast<std::size_t>(longest)];
                }
                const bool intra_chip = d == intra_chip_dim_;
                Link link{
                    c,         chip_at(next),
                    d,         direction,
                    wrap,      intra_chip ? topology.chip.intra_chip_bandwidth : topology.ici.link_bandwidth,
                    intra_chip};
                int id = static_cast<int>(links_.size());
                links_.push_back(link);
                link_index_[static_cast<std::size_t>((c * dims + d) * 2 + (direction > 0 ? 1 : 0))] = id;
            }
        }
    }
}

Torus::~Torus() = default;
Torus::Torus(Torus&&) noexcept = default;
Torus& Torus::operator=(Torus&&) noexcept = default;

int Torus::chip_at(const Coord& coord) const {
    int index = 0;
    for (std::size_t d = shape_.size(); d-- > 0;) index = index * shape_[d] + coord[d];
    return index;
}

int Torus::link_from(int chip, int dim, int direction) const {
    const int dims = static_cast<int>(shape_.size());
    return link_index_[static_cast<std::size_t>((chip * dims + dim) * 2 + (direction > 0 ? 1 : 0))];
}

int Torus::hops(int from, int to) const {
    std::call_once(graph_->built, [this] {
        for (std::size_t c = 0; c < coords_.size(); ++c) boost::add_vertex(graph_->g);
        for (std::size_t id = 0; id < links_.size(); ++id)
            boost::add_edge(static_cast<std::size_t>(links_[id].from),
                            static_cast<std::size_t>(links_[id].to), static_cast<int>(id), graph_->g);
    });
    std::vector<int> distance(static_cast<std::size_t>(chips()), -1);
    distance[static_cast<std::size_t>(from)] = 0;
    std::queue<std::size_t> frontier;
    frontier.push(static_cast<std::size_t>(from));
    while (!frontier.empty()) {
        std::size_t v = frontier.front();
        frontier.pop();
        if (static_cast<int>(v) == to) break;
        auto [begin, end] = boost::out_edges(v, graph_->g);
        for (auto it = begin; it != end; ++it) {
            std::size_t w = boost::target(*it, graph_->g);
            if (distance[w] < 0) {
                distance[w] = distance[v] + 1;
                frontier.push(w);
            }
        }
    }
    return distance[static_cast<std::size_t>(to)];
}

int Torus::bisection_links() const {
    int longest = static_cast<int>(std::max_element(shape_.begin(), shape_.end()) - shape_.begin());
    const int half = shape_[static_cast<std::size_t>(longest)] / 2;
    int crossing = 0;
    for (const auto& link : links_) {
        bool from_low =
            coords_[static_cast<std::size_t>(link.from)][static_cast<std::size_t>(longest)] < half;
        bool to_low = coords_[static_cast<std::size_t>(link.to)][static_cast<std::size_t>(longest)] < half;
        if (from_low != to_low) ++crossing;
    }
    return crossing;
}

std::vector<std::vector<int>> Torus::groups(const AxisMapping& axis) const {
    // Two chips share a group when they differ only in the axis' parts: along each part's dimension
    // at the part's stride, within the part's extent.
    std::vector<int> group_of(static_cast<std::size_t>(chips()), -1);
    std::vector<std::vector<int>> groups;
    for (int c = 0; c < chips(); ++c) {
        if (group_of[static_cast<std::size_t>(c)] >= 0) continue;
        std::vector<int> members{c};
        for (const auto& part : axis.parts) {
            std::vector<int> grown;
            for (int m : members) {
                Coord base = coord_of(m);
                const int length = shape_[static_cast<std::size_t>(part.dim)];
                int position = base[static_cast<std::size_t>(part.dim)];
                // Start of this chip's block of `size * stride` positions, keeping its offset mod stride.
                int block = part.size * part.stride;
                int start = position - (position % block) + (position % part.stride);
                for (int i = 0; i < part.size; ++i) {
                    Coord member = base;
                    member[static_cast<std::size_t>(part.dim)] = (start + i * part.stride) % length;
                    grown.push_back(chip_at(member));
                }
            }
            members = std::move(grown);
        }
        std::sort(members.begin(), members.end());
        members.erase(std::unique(members.begin(), members.end()), members.end());
        for (int m : members) group_of[static_cast<std::size_t>(m)] = static_cast<int>(groups.size());
        groups.push_back(std::move(members));
    }
    return groups;
}

}  // namespace podsim::network
