#pragma once

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace podsim::network {

struct MeshAxis {
    std::string name;  // data | fsdp | tensor for `podsim run`; free names for `podsim collective`
    int size = 1;
    bool operator==(const MeshAxis&) const = default;
};

// Logical device mesh: `ici` axes inside a slice (in order, the last one most local), `dcn` axes
// across slices. Products equal chips per slice and number of slices.
struct MeshSpec {
    std::vector<MeshAxis> ici;
    std::vector<MeshAxis> dcn;
    // Optional explicit placement: axis name -> torus dimensions (0 = x) it spans.
    std::map<std::string, std::vector<int>> mapping;
    // A MaxText custom mesh (`custom_mesh`, max_utils.create_custom_device_mesh) placing the two
    // axes instead: hybrid_ring_64x4 or hybrid_ring_32x8; empty for none.
    std::string custom;

    long ici_size() const;
    long dcn_size() const;
    // Product of every axis (ICI and DCN) called `name`; 1 when absent.
    long size_of(const std::string& name) const;
    long ici_size_of(const std::string& name) const;
    long dcn_size_of(const std::string& name) const;
    std::string to_string() const;
    bool operator==(const MeshSpec&) const = default;
};

// Parses "fsdp=16,tensor=4"; nullopt when an item is not name=positive-size.
std::optional<std::vector<MeshAxis>> parse_axis_list(std::string_view text);

}  // namespace podsim::network
