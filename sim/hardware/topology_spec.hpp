#pragma once

#include <map>
#include <optional>
#include <string>

#include "hardware/chip_spec.hpp"
#include "hardware/slice_shape.hpp"

namespace podsim::hardware {

// Which torus dimensions of a slice have wraparound links.
enum class WraparoundRule {
    always,            // every dimension longer than 2 wraps (v3 2D torus)
    none,              // a mesh
    whole_cubes_of_4,  // TPU v4/v5p: wraparound goes through the optical switches, so a slice is a
                       // torus (in every dimension) only when every dimension is a multiple of 4
    length_16,         // v5e/v6e: only dimensions of length 16 wrap
};

struct IciSpec {
    int dims = 3;
    double link_bandwidth = 0.0;  // bytes/s, one direction of one link
    double hop_latency = 0.0;     // seconds per hop
    WraparoundRule wraparound = WraparoundRule::whole_cubes_of_4;
    SliceShape max_slice;
    bool twisted_torus = false;  // n x n x 2n and n x 2n x 2n shapes may be twisted (ISCA 2023 Fig. 6)
};

struct HostSpec {
    int chips_per_host = 4;
    double host_memory = 0.0;  // bytes of host RAM per host
    // Between one chip's HBM and host memory, each direction (PCIe DMA): what remat offload to pinned
    // host memory moves activations at. 0 = unknown.
    double transfer_bandwidth_per_chip = 0.0;
};

struct DcnSpec {
    double bandwidth_per_chip = 0.0;  // bytes/s each chip can send across slices
    double latency = 0.0;             // seconds per DCN transfer
};

struct TopologySpec {
    std::string name;
    ChipSpec chip;
    IciSpec ici;
    HostSpec host;
    DcnSpec dcn;
    std::map<std::string, std::string> sources;  // key path -> where the number comes from
};

// The most chips one simulated slice may have: 16 times a full TPU v4 pod (4,096 chips) and 7 times a
// v5p pod (8,960). The torus, its links and every collective's rings grow with it; beyond this a
// config costs gigabytes and minutes (256x256x256 exhausted memory).
inline constexpr long kMaxSliceChips = 65'536;

// Why `shape` cannot be a slice of `topology`, or nullopt when it can.
std::optional<std::string> slice_shape_error(const TopologySpec& topology, const SliceShape& shape);

// `shape` padded with 1s to the topology's number of dimensions.
SliceShape normalized_slice(const TopologySpec& topology, const SliceShape& shape);

// Whether dimension `dim` of a (normalized) slice has wraparound links.
bool dimension_wraps(const TopologySpec& topology, const SliceShape& shape, std::size_t dim);

}  // namespace podsim::hardware
