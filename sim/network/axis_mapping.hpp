#pragma once

#include <string>
#include <variant>
#include <vector>

#include "hardware/topology_spec.hpp"
#include "network/mesh_spec.hpp"

namespace podsim::network {

// The piece of one torus dimension that a mesh axis uses: `size` chips spaced `stride` apart.
struct AxisDimPart {
    int dim = 0;
    int size = 1;
    int stride = 1;
    bool wraps = false;  // the group closes into a ring over wraparound links
    bool operator==(const AxisDimPart&) const = default;
};

struct AxisMapping {
    std::string axis;
    int size = 1;
    std::vector<AxisDimPart> parts;  // empty for an axis of size 1
    bool operator==(const AxisMapping&) const = default;
};

// Assigns each ICI mesh axis to torus dimensions as jax.experimental.mesh_utils.create_device_mesh
// does for TPU tori: the last (most local) axis first, preferring an exact match on as many whole
// physical dimensions as possible; when none matches exactly, a dimension is split (the first taker
// gets the contiguous part). Explicit `mesh.mapping` entries are honoured. Returns an error message
// when the mesh cannot be placed.
std::variant<std::vector<AxisMapping>, std::string> map_mesh_axes(const hardware::TopologySpec& topology,
                                                                  const hardware::SliceShape& slice,
                                                                  const MeshSpec& mesh);

}  // namespace podsim::network
