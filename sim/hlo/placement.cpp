#include "hlo/placement.hpp"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "core/csv.hpp"
#include "core/diagnostics.hpp"

namespace podsim::hlo {
namespace {

[[noreturn]] void placement_error(const std::string& source, const std::string& key, std::string message) {
    core::Diagnostics d;
    d.error({source, 0, 0}, key, std::move(message));
    throw core::UserError(d);
}

// JAX's device order: the devices of one chip first (v2/v3 cores, the grid's intra-chip dimension),
// then x fastest, then y, then z.
network::Coord coord_of_index(long index, const std::vector<int>& grid, int intra_chip) {
    network::Coord c{0, 0, 0, 0};
    if (intra_chip >= 0) {
        c[static_cast<std::size_t>(intra_chip)] =
            static_cast<int>(index % grid[static_cast<std::size_t>(intra_chip)]);
        index /= grid[static_cast<std::size_t>(intra_chip)];
    }
    for (std::size_t d = 0; d < grid.size() && d < c.size(); ++d) {
        if (static_cast<int>(d) == intra_chip) continue;
        c[d] = static_cast<int>(index % grid[d]);
        index /= grid[d];
    }
    return c;
}

}  // namespace

std::optional<DeviceOrder> parse_device_order(const std::string& text, std::string& error) {
    DeviceOrder order;
    if (text.empty() || text == "auto") return order;
    if (text == "mesh") {
        order.kind = DeviceOrder::Kind::mesh;
        return order;
    }
    if (text == "devices") {
        order.kind = DeviceOrder::Kind::devices;
        return order;
    }
    order.kind = DeviceOrder::Kind::list;
    for (const std::string& item : core::split_list(text, ',')) {
        int value = 0;
        std::size_t used = 0;
        try {
            value = std::stoi(item, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != item.size() || item.empty() || value < 0) {
            error =
                fmt::format("'{}' is not mesh, devices, or a comma-separated list of device indices", text);
            return std::nullopt;
        }
        order.list.push_back(value);
    }
    return order;
}

Placement::Placement(const hardware::TopologySpec& topology, const hardware::SliceShape& slice,
                     std::int64_t devices, const std::vector<MeshAxisSpec>& mesh, const DeviceOrder& order,
                     const std::string& source)
    : topology_(topology), slice_(hardware::normalized_slice(topology, slice)), devices_(devices) {
    const hardware::SliceShape grid = hardware::device_grid(topology, slice_);
    grid_ = grid.dims;
    const int intra_chip = hardware::intra_chip_dimension(topology);
    const long slice_devices = hardware::slice_devices(topology, slice_);
    if (devices > slice_devices) {
        placement_error(source, "slice",
                        fmt::format("the module runs on {} devices; slice {} of {} has {}", devices,
                                    slice_.to_string(), topology.name, slice_devices));
    }
    coords_.resize(static_cast<std::size_t>(devices));
    std::int64_t mesh_devices = 1;
    for (const auto& a : mesh) mesh_devices *= a.size;
    const bool use_mesh = order.kind == DeviceOrder::Kind::mesh ||
                          (order.kind == DeviceOrder::Kind::automatic && !mesh.empty() &&
                           mesh_devices == slice_devices && devices == slice_devices);
    if (order.kind == DeviceOrder::Kind::list) {
        if (static_cast<long>(order.list.size()) != slice_devices) {
            placement_error(source, "device-order",
                            fmt::format("lists {} devices; slice {} has {}", order.list.size(),
                                        slice_.to_string(), slice_devices));
        }
        std::set<int> seen(order.list.begin(), order.list.end());
        if (static_cast<long>(seen.size()) != slice_devices || *seen.begin() != 0 ||
            *seen.rbegin() != slice_devices - 1) {
            placement_error(
                source, "device-order",
                fmt::format("is not a permutation of the slice's devices 0..{}", slice_devices - 1));
        }
        for (std::int64_t i = 0; i < devices; ++i)
            coords_[static_cast<std::size_t>(i)] =
                coord_of_index(order.list[static_cast<std::size_t>(i)], grid_, intra_chip);
        description_ = "explicit device order";
        mesh_.ici.push_back({"devices", static_cast<int>(devices)});
        return;
    }
    if (use_mesh) {
        if (mesh.empty() || mesh_devices != slice_devices || devices != slice_devices) {
            placement_error(source, "device-order",
                            fmt::format("mesh: the module names no device mesh of the slice's {} devices",
                                        slice_devices));
        }
        network::MeshSpec spec;
        for (const auto& a : mesh) spec.ici.push_back({a.name, static_cast<int>(a.size)});
        auto mapped = network::map_mesh_axes(topology, slice_, spec);
        if (auto* why = std::get_if<std::string>(&mapped)) placement_error(source, "device-order", *why);
        const auto& axes = std::get<std::vector<network::AxisMapping>>(mapped);
        for (std::int64_t id = 0; id < devices; ++id) {
            // Row-major mesh index: the last axis varies fastest; within an axis, its first part.
            std::int64_t rest = id;
            network::Coord c{0, 0, 0, 0};
            for (std::size_t a = axes.size(); a-- > 0;) {
                std::int64_t index = rest % mesh[a].size;
                rest /= mesh[a].size;
                for (const auto& part : axes[a].parts) {
                    c[static_cast<std::size_t>(part.dim)] +=
                        static_cast<int>(index % part.size) * part.stride;
                    index /= part.size;
                }
            }
            coords_[static_cast<std::size_t>(id)] = c;
        }
        mesh_ = spec;
        std::vector<std::string> names;
        for (const auto& a : mesh) names.push_back(fmt::format("{}={}", a.name, a.size));
        description_ = fmt::format("mesh {}", fmt::join(names, ","));
        return;
    }
    for (std::int64_t i = 0; i < devices; ++i)
        coords_[static_cast<std::size_t>(i)] = coord_of_index(static_cast<long>(i), grid_, intra_chip);
    description_ = "devices";
    mesh_.ici.push_back({"devices", static_cast<int>(devices)});
}

Placement::Parts Placement::parts_of(const std::vector<std::int64_t>& group) const {
    Parts out;
    if (group.size() <= 1) return out;
    long product = 1;
    for (std::size_t d = 0; d < grid_.size(); ++d) {
        std::vector<int> values;
        for (std::int64_t id : group) {
            if (id < 0 || id >= devices_) continue;
            values.push_back(coords_[static_cast<std::size_t>(id)][d]);
        }
        std::sort(values.begin(), values.end());
        values.erase(std::unique(values.begin(), values.end()), values.end());
        if (values.size() <= 1) continue;
        const int stride = values[1] - values[0];
        bool even = stride > 0;
        for (std::size_t i = 1; i < values.size() && even; ++i) even = values[i] - values[i - 1] == stride;
        if (!even) out.exact = false;
        network::AxisDimPart part;
        part.dim = static_cast<int>(d);
        part.size = static_cast<int>(values.size());
        part.stride = even ? stride : 1;
        part.wraps = d < slice_.dims.size() && hardware::dimension_wraps(topology_, slice_, d) &&
                     part.size * part.stride == grid_[d];
        product *= part.size;
        out.parts.push_back(part);
    }
    if (product != static_cast<long>(group.size())) out.exact = false;
    return out;
}

}  // namespace podsim::hlo
