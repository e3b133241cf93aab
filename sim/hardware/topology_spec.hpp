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
static_assert(kWraparoundNames.size() == static_cast<std::size_t>(WraparoundRule::length_16) + 1);

// Defaults: topology_keys.hpp.

struct IciSpec {
    int dims = static_cast<int>(topology_key("ici.dims").integer_default());
    double link_bandwidth = 0.0;  // bytes/s, one direction of one link
    double hop_latency = 0.0;     // seconds per hop
    WraparoundRule wraparound = topology_key("ici.wraparound").choice_default<WraparoundRule>();
    SliceShape max_slice;
    // n x n x 2n and n x 2n x 2n shapes may be twisted (ISCA 2023 Fig. 6)
    bool twisted_torus = topology_key("ici.twisted_torus").boolean_default();
    bool operator==(const IciSpec&) const = default;
};

struct HostSpec {
    int chips_per_host = static_cast<int>(topology_key("host.chips_per_host").integer_default());
    double host_memory = 0.0;  // bytes of host RAM per host
    // Between one chip's HBM and host memory, each direction (PCIe DMA): what remat offload to pinned
    // host memory moves activations at. 0 = unknown.
    double transfer_bandwidth_per_chip = 0.0;

    bool operator==(const HostSpec&) const = default;
};

struct DcnSpec {
    double bandwidth_per_chip = 0.0;                             // bytes/s each chip can send across slices
    double latency = topology_key("dcn.latency").default_value;  // seconds per DCN transfer
    bool operator==(const DcnSpec&) const = default;
};

struct TopologySpec {
    std::string name;
    ChipSpec chip;
    IciSpec ici;
    HostSpec host;
    DcnSpec dcn;
    std::map<std::string, std::string> sources;  // key path -> where the number comes from
    bool operator==(const TopologySpec&) const = default;
};

// Why `shape` cannot be a slice of `topology`, or nullopt when it can.
std::optional<std::string> slice_shape_error(const TopologySpec& topology, const SliceShape& shape);

// `shape` padded with 1s to the topology's number of dimensions.
SliceShape normalized_slice(const TopologySpec& topology, const SliceShape& shape);

// JAX devices in `shape`: chips x devices_per_chip (a v3-8, 2x2, has 8). Saturates at the largest long.
long slice_devices(const TopologySpec& topology, const SliceShape& shape);

// Devices per chip a mesh of `mesh_devices` uses: all of them, except that on a one-chip slice a mesh
// may use fewer (a divisor of devices_per_chip): a single-device job on a v3-8 (PyTorch/XLA
// world_size 1, a JAX mesh over jax.devices()[:1]) runs on one TensorCore while the other idles.
int devices_per_chip_in_use(const TopologySpec& topology, const SliceShape& shape, long mesh_devices);

// The grid of devices a mesh is laid on: the normalized slice, then, when a chip holds several
// devices, one more dimension of length devices_per_chip (the devices of one chip, whose transfers
// do not use ICI links). Device index order is chip-major as JAX numbers v2/v3 cores: the devices of
// a chip are adjacent.
SliceShape device_grid(const TopologySpec& topology, const SliceShape& shape, int devices_per_chip);
inline SliceShape device_grid(const TopologySpec& topology, const SliceShape& shape) {
    return device_grid(topology, shape, topology.chip.devices_per_chip);
}

// The index of the device grid's intra-chip dimension (= ici.dims), or -1 with one device per chip.
int intra_chip_dimension(const TopologySpec& topology);

// Whether dimension `dim` of a (normalized) slice has wraparound links.
bool dimension_wraps(const TopologySpec& topology, const SliceShape& shape, std::size_t dim);

}  // namespace podsim::hardware
