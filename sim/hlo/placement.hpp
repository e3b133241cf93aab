#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "hardware/topology_spec.hpp"
#include "network/axis_mapping.hpp"
#include "network/mesh_spec.hpp"
#include "network/torus.hpp"

namespace podsim::hlo {

// How the module's device ids (replica groups' numbers) map to the devices of the slice.
//  - `mesh`: a module whose collectives name a device mesh (replica_groups=mesh[...]) is laid out
//    as jax.experimental.mesh_utils.create_device_mesh lays that mesh on the topology (the same
//    placement as a run config's mesh, network::map_mesh_axes), device id = row-major mesh index;
//  - `devices`: device id i is the slice's device i in JAX's device order (x fastest, then y, then
//    z; the cores of a v2/v3 chip adjacent);
//  - an explicit list: device id i runs on slice device list[i] (`--device-order 3,2,1,0,...`).
struct DeviceOrder {
    enum class Kind : std::uint8_t { automatic, mesh, devices, list };
    Kind kind = Kind::automatic;  // automatic: mesh when the module names one that covers the slice
    std::vector<int> list;
};

// Parses `--device-order`: mesh, devices, or a comma-separated permutation of device indices.
// nullopt with `error` set when it is none of them.
std::optional<DeviceOrder> parse_device_order(const std::string& text, std::string& error);

struct MeshAxisSpec {
    std::string name;
    std::int64_t size = 1;
};

class Placement {
  public:
    // Throws core::UserError (located at `source`) when the module needs more devices than the
    // slice has, or an explicit order is not a permutation of the slice's devices.
    Placement(const hardware::TopologySpec& topology, const hardware::SliceShape& slice, std::int64_t devices,
              const std::vector<MeshAxisSpec>& mesh, const DeviceOrder& order, const std::string& source);

    std::int64_t devices() const { return devices_; }
    const std::vector<int>& grid() const { return grid_; }
    const network::Coord& coord(std::int64_t device) const {
        return coords_[static_cast<std::size_t>(device)];
    }
    // How the devices were placed, as the report says it: "mesh axis_0=8,axis_1=2", "devices", ...
    const std::string& description() const { return description_; }
    const network::MeshSpec& mesh() const { return mesh_; }

    // The torus placement of one group of devices: per dimension it spans, its size, stride and
    // whether it closes into a ring. `exact` is false when the group is not a product of evenly
    // spaced lines (then the parts span its extent, an approximation).
    struct Parts {
        std::vector<network::AxisDimPart> parts;
        bool exact = true;
    };
    Parts parts_of(const std::vector<std::int64_t>& group) const;

  private:
    const hardware::TopologySpec& topology_;
    hardware::SliceShape slice_;
    std::int64_t devices_ = 1;
    std::vector<int> grid_;
    std::vector<network::Coord> coords_;  // by device id
    std::string description_;
    network::MeshSpec mesh_;
};

}  // namespace podsim::hlo
