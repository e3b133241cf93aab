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

// Exact match of `size` by a subset of whole remaining dimensions, largest subsets first.
bool take_exact(std::vector<DimState>& dims, int size, std::vector<AxisDimPart>& parts,
                const hardware::TopologySpec& topology, const hardware::SliceShape& slice) {
    const int n = static_cast<int>(dims.size());
    for (int count = n; count >= 1; --count) {
        for (unsigned mask = 1; mask < (1u << n); ++mask) {
            if (std::popcount(mask) != count) continue;
            long product = 1;
            bool all_free = true;
            for (int d = 0; d < n; ++d) {
                if (!(mask & (1u << d))) continue;
                if (dims[static_cast<std::size_t>(d)].available <= 1) all_free = false;
                product *= dims[static_cast<std::size_t>(d)].available;
            }
            if (!all_free || product != size) continue;
            for (int d = 0; d < n; ++d) {
                if (mask & (1u << d)) {
                    parts.push_back(
                        take(dims, d, dims[static_cast<std::size_t>(d)].available, topology, slice));
                }
            }
            return true;
        }
    }
    return false;
}

}  // namespace

std::variant<std::vector<AxisMapping>, std::string> map_mesh_axes(const hardware::TopologySpec& topology,
                                                                  const hardware::SliceShape& slice,
                                                                  const MeshSpec& mesh) {
    hardware::SliceShape shape = hardware::normalized_slice(topology, slice);
    std::vector<DimState> dims;
    for (int length : shape.dims) dims.push_back(DimState{length, length, 1});
    if (mesh.ici_size() != shape.chips()) {
        return fmt::format("mesh {} has {} devices but slice {} has {} chips", mesh.to_string(),
                           mesh.ici_size(), slice.to_string(), shape.chips());
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
        if (take_exact(dims, axis.size, result[r].parts, topology, shape)) continue;
        // Split dimensions: take common factors, lowest dimension first.
        int remaining = axis.size;
        for (std::size_t d = 0; d < dims.size() && remaining > 1; ++d) {
            int g = std::gcd(remaining, dims[d].available);
            if (g <= 1) continue;
            result[r].parts.push_back(take(dims, static_cast<int>(d), g, topology, shape));
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
