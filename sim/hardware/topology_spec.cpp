#include "hardware/topology_spec.hpp"

#include <algorithm>
#include <limits>

#include <fmt/format.h>

namespace podsim::hardware {
namespace {
bool power_of_two(int n) {
    return n > 0 && (n & (n - 1)) == 0;
}
}  // namespace

SliceShape normalized_slice(const TopologySpec& topology, const SliceShape& shape) {
    SliceShape out = shape;
    while (out.dims.size() < static_cast<std::size_t>(topology.ici.dims)) out.dims.push_back(1);
    return out;
}

std::optional<std::string> slice_shape_error(const TopologySpec& topology, const SliceShape& shape) {
    if (shape.dims.size() > static_cast<std::size_t>(topology.ici.dims)) {
        return fmt::format("slice {} has {} dimensions, but {} chips form a {}D mesh", shape.to_string(),
                           shape.dims.size(), topology.name, topology.ici.dims);
    }
    if (shape.chips() > kMaxSliceChips) {
        double chips = 1.0;
        for (int d : shape.dims) chips *= d;
        return fmt::format("slice {} has {:.0f} chips; podsim simulates at most {} chips per slice",
                           shape.to_string(), chips, kMaxSliceChips);
    }
    SliceShape s = normalized_slice(topology, shape);
    SliceShape max = normalized_slice(topology, topology.ici.max_slice);
    for (std::size_t d = 0; d < s.dims.size(); ++d) {
        if (!max.dims.empty() && s.dims[d] > max.dims[d]) {
            return fmt::format("slice {} exceeds the largest {} slice {} in dimension {}", shape.to_string(),
                               topology.name, topology.ici.max_slice.to_string(), d);
        }
        int n = s.dims[d];
        // Cloud TPU "types and topologies": v4/v5p dimensions are 1, 2, 4 or a multiple of 4;
        // the 2D generations take powers of two.
        bool ok = topology.ici.wraparound == WraparoundRule::whole_cubes_of_4 ? (n <= 2 || n % 4 == 0)
                                                                              : power_of_two(n);
        if (!ok) {
            return fmt::format("slice {} is not a {} slice shape: dimension {} has length {} ({})",
                               shape.to_string(), topology.name, d, n,
                               topology.ici.wraparound == WraparoundRule::whole_cubes_of_4
                                   ? "each dimension must be 1, 2, or a multiple of 4"
                                   : "each dimension must be a power of two");
        }
    }
    return std::nullopt;
}

long slice_devices(const TopologySpec& topology, const SliceShape& shape) {
    const long chips = shape.chips();
    const long per_chip = std::max(1, topology.chip.devices_per_chip);
    if (chips > std::numeric_limits<long>::max() / per_chip) return std::numeric_limits<long>::max();
    return chips * per_chip;
}

int devices_per_chip_in_use(const TopologySpec& topology, const SliceShape& shape, long mesh_devices) {
    const int per_chip = std::max(1, topology.chip.devices_per_chip);
    if (shape.chips() == 1 && mesh_devices >= 1 && mesh_devices < per_chip && per_chip % mesh_devices == 0)
        return static_cast<int>(mesh_devices);
    return per_chip;
}

SliceShape device_grid(const TopologySpec& topology, const SliceShape& shape, int devices_per_chip) {
    SliceShape grid = normalized_slice(topology, shape);
    // The intra-chip dimension exists whenever the chip has several devices (its index is fixed), even
    // if a one-chip job uses one of them.
    if (topology.chip.devices_per_chip > 1) grid.dims.push_back(std::max(1, devices_per_chip));
    return grid;
}

int intra_chip_dimension(const TopologySpec& topology) {
    return topology.chip.devices_per_chip > 1 ? topology.ici.dims : -1;
}

bool dimension_wraps(const TopologySpec& topology, const SliceShape& shape, std::size_t dim) {
    SliceShape s = normalized_slice(topology, shape);
    if (dim >= s.dims.size() || s.dims[dim] <= 2) return false;  // a ring of 2 is one link pair
    switch (topology.ici.wraparound) {
        case WraparoundRule::always:
            return true;
        case WraparoundRule::none:
            return false;
        case WraparoundRule::length_16:
            return s.dims[dim] == 16;
        case WraparoundRule::whole_cubes_of_4:
            for (int n : s.dims) {
                if (n % 4 != 0) return false;
            }
            return true;
    }
    return false;
}

}  // namespace podsim::hardware
