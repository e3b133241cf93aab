#include "network/axis_mapping.hpp"

#include <numeric>

#include <fmt/format.h>

namespace podsim::network {
namespace {

struct DimState {
    int length = 1;     // physical length of the dimension
    int available = 1;  // chips of it not yet given to an axis (as a factor)
    int used = 1;       // product of the factors already taken: the next taker's stride
};

AxisDimPart take(std::vector<DimState>& dims, int d, int size, const hardware::TopologySpec& topology,
                 const hardware::SliceShape& slice) {
    DimState& s = dims[static_cast<std::size_t>(d)];
    AxisDimPart part;
    part.dim = d;
    part.size = size;
    part.stride = s.used;
    // Only a group that spans the whole dimension closes over its wraparound links.
    part.wraps =
        hardware::dimension_wraps(topology, slice, static_cast<std::size_t>(d)) && size * s.used == s.length;
    s.available /= size;
    s.used *= size;
    return part;
}

// Exact match of `size` by a subset of whole remaining dimensions, largest subsets first; among
// subsets of one size, those earlier in `order` first.
bool take_exact(std::vector<DimState>& dims, const std::vector<int>& order, int size,
                std::vector<AxisDimPart>& parts, const hardware::TopologySpec& topology,
                const hardware::SliceShape& slice) {
    const int n = static_cast<int>(dims.size());
    for (int count = n; count >= 1; --count) {
        for (unsigned mask = 1; mask < (1u << n); ++mask) {
            if (std::popcount(mask) != count) continue;
            long product = 1;
            bool all_free = true;
            for (int i = 0; i < n; ++i) {
                if (!(mask & (1u << i))) continue;
                const auto& dim = dims[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])];
                if (dim.available <= 1) all_free = false;
                product *= dim.available;
            }
            if (!all_free || product != size) continue;
            for (int i = 0; i < n; ++i) {
                if (mask & (1u << i)) {
                    const int d = order[static_cast<std::size_t>(i)];
                    parts.push_back(
                        take(dims, d, dims[static_cast<std::size_t>(d)].available, topology, slice));
                }
            }
            return true;
        }
    }
    return false;
}

// MaxText's custom meshes (max_utils.reshape_mesh_to_rings) on a 16x16 slice: the smaller axis on
// blocks of bx x by chips (hybrid_ring_64x4: 2x2 blocks, each a ring of 4; hybrid_ring_32x8: 2x4
// blocks, rings of 8), the larger one across the blocks.
std::variant<std::vector<AxisMapping>, std::string> map_custom(const hardware::TopologySpec& topology,
                                                               const hardware::SliceShape& slice,
                                                               const MeshSpec& mesh) {
    const bool rings_of_4 = mesh.custom == "hybrid_ring_64x4";
    if (!rings_of_4 && mesh.custom != "hybrid_ring_32x8")
        return fmt::format("custom mesh '{}' is not hybrid_ring_64x4 or hybrid_ring_32x8", mesh.custom);
    const hardware::SliceShape shape = hardware::normalized_slice(topology, slice);
    if (shape.dims.size() < 2 || shape.dims[0] != 16 || shape.dims[1] != 16 || shape.chips() != 256 ||
        topology.chip.devices_per_chip != 1)
        return fmt::format(
            "custom mesh {} places the chips of a 16x16 slice (MaxText create_custom_device_mesh); "
            "slice {} is not one",
            mesh.custom, slice.to_string());
    const int small = rings_of_4 ? 4 : 8, large = rings_of_4 ? 64 : 32;
    const int bx = 2, by = small / 2;
    std::vector<AxisMapping> result(mesh.ici.size());
    int placed_small = 0, placed_large = 0;
    for (std::size_t i = 0; i < mesh.ici.size(); ++i) {
        const MeshAxis& axis = mesh.ici[i];
        result[i].axis = axis.name;
        result[i].size = axis.size;
        auto part = [&](int dim, int size, int stride) {
            AxisDimPart p{dim, size, stride, false};
            p.wraps = hardware::dimension_wraps(topology, shape, static_cast<std::size_t>(dim)) &&
                      size * stride == 16;
            return p;
        };
        if (axis.size == 1) continue;
        if (axis.size == small && placed_small++ == 0) {
            result[i].parts = {part(0, bx, 1), part(1, by, 1)};
        } else if (axis.size == large && placed_large++ == 0) {
            result[i].parts = {part(0, 16 / bx, bx), part(1, 16 / by, by)};
        } else {
            placed_small = 2;  // an axis of another size: not the custom mesh's shape
        }
    }
    if (placed_small != 1 || placed_large != 1)
        return fmt::format(
            "custom mesh {} takes one ICI axis of {} and one of {} (and axes of 1); mesh {} is not so",
            mesh.custom, large, small, mesh.to_string());
    return result;
}

}  // namespace

std::variant<std::vector<AxisMapping>, std::string> map_mesh_axes(const hardware::TopologySpec& topology,
                                                                  const hardware::SliceShape& slice,
                                                                  const MeshSpec& mesh) {
    if (!mesh.custom.empty()) return map_custom(topology, slice, mesh);
    hardware::SliceShape shape = hardware::normalized_slice(topology, slice);
    const hardware::SliceShape grid = hardware::device_grid(
        topology, slice, hardware::devices_per_chip_in_use(topology, slice, mesh.ici_size()));
    std::vector<DimState> dims;
    for (int length : grid.dims) dims.push_back(DimState{length, length, 1});
    if (mesh.ici_size() != grid.chips()) {
        if (topology.chip.devices_per_chip > 1) {
            return fmt::format("mesh {} has {} devices but slice {} has {} ({} chips x {} devices per chip)",
                               mesh.to_string(), mesh.ici_size(), slice.to_string(),
                               hardware::slice_devices(topology, slice), shape.chips(),
                               topology.chip.devices_per_chip);
        }
        return fmt::format("mesh {} has {} devices but slice {} has {} chips", mesh.to_string(),
                           mesh.ici_size(), slice.to_string(), shape.chips());
    }
    // The most local axes go on a chip's own devices first, as JAX's device order on v2/v3 puts the
    // two cores of a chip next to each other (mesh_utils: _TRAY_RING_ORDER).
    std::vector<int> order;
    const int intra = hardware::intra_chip_dimension(topology);
    if (intra >= 0) order.push_back(intra);
    for (int d = 0; d < static_cast<int>(dims.size()); ++d) {
        if (d != intra) order.push_back(d);
    }

    std::vector<AxisMapping> result(mesh.ici.size());
    // Explicit placements first.
    for (std::size_t i = 0; i < mesh.ici.size(); ++i) {
        const MeshAxis& axis = mesh.ici[i];
        result[i].axis = axis.name;
        result[i].size = axis.size;
        auto it = mesh.mapping.find(axis.name);
        if (it == mesh.mapping.end()) continue;
        long product = 1;
        for (int d : it->second) {
            if (d < 0 || d >= static_cast<int>(dims.size())) {
                return fmt::format("mesh.mapping.{}: torus dimension {} does not exist in slice {}",
                                   axis.name, d, slice.to_string());
            }
            if (dims[static_cast<std::size_t>(d)].available != dims[static_cast<std::size_t>(d)].length) {
                return fmt::format("mesh.mapping.{}: torus dimension {} is already used by another axis",
                                   axis.name, d);
            }
            product *= dims[static_cast<std::size_t>(d)].length;
        }
        if (product != axis.size) {
            return fmt::format("mesh.mapping.{}: the dimensions given hold {} chips but the axis has {}",
                               axis.name, product, axis.size);
        }
        for (int d : it->second) {
            result[i].parts.push_back(
                take(dims, d, dims[static_cast<std::size_t>(d)].length, topology, shape));
        }
    }
    // The rest, most local (last) axis first.
    for (std::size_t r = mesh.ici.size(); r-- > 0;) {
        const MeshAxis& axis = mesh.ici[r];
        if (mesh.mapping.count(axis.name) || axis.size == 1) continue;
        if (take_exact(dims, order, axis.size, result[r].parts, topology, shape)) continue;
        // Split dimensions: take common factors, the chip's devices, then lowest dimension first.
        int remaining = axis.size;
        for (std::size_t i = 0; i < order.size() && remaining > 1; ++i) {
            const int d = order[i];
            int g = std::gcd(remaining, dims[static_cast<std::size_t>(d)].available);
            if (g <= 1) continue;
            result[r].parts.push_back(take(dims, d, g, topology, shape));
            remaining /= g;
        }
        if (remaining != 1) {
            return fmt::format(
                "mesh axis '{}' of size {} cannot be placed on the chips of slice {} that are "
                "left after the axes after it",
                axis.name, axis.size, slice.to_string());
        }
    }
    return result;
}

}  // namespace podsim::network
