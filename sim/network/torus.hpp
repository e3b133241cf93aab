#pragma once

#include <array>
#include <memory>
#include <vector>

#include "hardware/topology_spec.hpp"
#include "network/axis_mapping.hpp"

namespace podsim::network {

using Coord = std::array<int, 4>;

struct Link {
    int from = 0;       // device index (the chip with one device per chip)
    int to = 0;         // device index
    int dim = 0;        // torus dimension
    int direction = 0;  // +1 or -1
    bool wraparound = false;
    double bandwidth = 0.0;   // bytes/s, this direction
    bool intra_chip = false;  // between two devices of one chip (chip.intra_chip_bandwidth), not ICI
};

// One slice as a Boost.Graph of devices and directed links, built from the topology's rules. With one
// device per chip the vertices are the chips (`chips()` counts them); with several (v2/v3), the
// device grid has one more dimension (hardware::device_grid) whose links join the devices of a chip
// at chip.intra_chip_bandwidth, and `chips()` counts devices. ICI links follow the rules:
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
    int intra_chip_dimension() const { return intra_chip_dim_; }
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
    int intra_chip_dim_ = -1;  // dimension of the devices of one chip, or -1
    std::vector<Coord> coords_;
    std::vector<Link> links_;
    std::vector<int> link_index_;  // chip * dims * 2 + dim * 2 + (direction > 0) -> link or -1
    std::unique_ptr<Graph> graph_;
};

// Each link's bandwidth as the flow network uses it: ICI links scaled by `ici_link_efficiency` (the
// calibrated fraction), intra-chip links as the topology gives them.
std::vector<double> effective_link_bandwidth(const Torus& torus, double ici_link_efficiency);

// Whether `slice` is a shape that may be twisted (n x n x 2n or n x 2n x 2n, n >= 4, in any order).
bool twistable(const hardware::SliceShape& slice);

}  // namespace podsim::network
