#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace podsim::hlo {

// The devices a collective runs over, in one of the three ways XLA writes them:
//   explicit lists      {{0,1,2,3},{4,5,6,7}}
//   iota                [2,8]<=[8,2]T(1,0): iota(16) reshaped to [8,2], transposed, cut into 2 groups
//   mesh axes (JAX 0.11) mesh['axis_0'=8,'axis_1'=2] {'axis_0'}: the devices that differ only in the
//                       named axes of a row-major device mesh (a sub-axis as 'a':(pre)size)
// (xla/hlo/ir/replica_group.h: CollectiveDeviceList, IotaReplicaGroupList, MeshAxesReplicaGroupList.)
struct ReplicaGroups {
    enum class Form : std::uint8_t { none, explicit_list, iota, mesh_axes };
    struct MeshAxis {
        std::string name;
        std::int64_t size = 1;
    };
    struct AxisRef {
        int axis = 0;               // index into mesh
        std::int64_t pre_size = 0;  // sub-axis: devices of the axis before it (0: the whole axis)
        std::int64_t size = 0;      // sub-axis size
    };

    Form form = Form::none;
    std::vector<std::vector<std::int64_t>> lists;  // explicit_list
    std::int64_t num_groups = 0;                   // iota
    std::int64_t group_size = 0;
    std::vector<std::int64_t> reshape_dims;
    std::vector<int> transpose;
    std::vector<MeshAxis> mesh;  // mesh_axes
    std::vector<AxisRef> axes;
    std::vector<std::int64_t> mesh_device_ids;  // empty: iota
    std::string text;                           // as written (names the group in reports)

    // The groups of device ids. `devices` is how many the module runs on: an empty explicit list
    // means one group of them all.
    std::vector<std::vector<std::int64_t>> expand(std::int64_t devices) const;
};

// Parses a replica_groups value; nullopt with `error` set when it is none of the three forms.
std::optional<ReplicaGroups> parse_replica_groups(const std::string& text, std::string& error);

// The devices of iota(product(reshape_dims)) reshaped and transposed by `transpose`, in order.
std::vector<std::int64_t> iota_devices(const std::vector<std::int64_t>& reshape_dims,
                                       const std::vector<int>& transpose);

}  // namespace podsim::hlo
