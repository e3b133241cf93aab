#pragma once

#include <array>
#include <memory>
#include <vector>

#include "hardware/topology_spec.hpp"
#include "network/axis_mapping.hpp"

namespace podsim::network {

using Coord = std::array<int, 4>;

struct Link {
    int from = 0;       // chip index
    int to = 0;         // chip index
    int dim = 0;        // torus dimension
    int direction = 0;  // +1 or -1
    bool wraparound = false;
    double bandwidth = 0.0;  // bytes/s, this direction
};

// One slice as a Boost.Graph of chips and directed ICI links, built from the topology's rules:
// neighbours along each dimension, wraparound links where the dimension wraps, and (on request)
// the twisted wraparound of n x n x 2n and n x 2n x 2n shapes, whose short dimensions wrap onto the
// chip half-way along the long one (ISCA 2023, Fig. 6).
class Torus {
  public:
    Torus(const hardware::TopologySpec& topology, const hardware::SliceShape& slice, bool twisted = false);
    ~Torus();
    Torus(Torus&&) noexcept;
    Torus& operator=(Torus&&) noexcept;

    int chips() const { return static_cast<int>(coords_.size()); }
    const std::vector<int>& shape() const { return shape_; }
    bool wraps(int dim) const { return wraps_[static_cast<std::size_t>(dim)]; }
    bool twisted() const { return twisted_; }
    int chip_at(const Coord& coord) const;
    const Coord& coord_of(int chip) const { return coords_[static_cast<std::size_t>(chip)]; }
    const std::vector<Link>& links() const { return links_; }
    // The link leaving `chip` along `dim` in `direction`, or -1 where the slice ends.
    int link_from(int chip, int dim, int direction) const;
    // Shortest hop count between two chips (breadth-first search on the graph).
    int hops(int from, int to) const;
    // Links crossing the cut through the middle of the longest dimension (both directions).
    int bisection_links() const;
    // Chips of each group of a mapped mesh axis: every chip's group, listed once per group.
    std::vector<std::vector<int>> groups(const AxisMapping& axis) const;

  private:
    struct Graph;
    std::vector<int> shape_;
    std::vector<bool> wraps_;
    bool twisted_ = false;
    std::vector<Coord> coords_;
    std::vector<Link> links_;
    std::vector<int> link_index_;  // chip * dims * 2 + dim * 2 + (direction > 0) -> link or -1
    std::unique_ptr<Graph> graph_;
};

// Whether `slice` is a shape that may be twisted (n x n x 2n or n x 2n x 2n, n >= 4, in any order).
bool twistable(const hardware::SliceShape& slice);

}  // namespace podsim::network
