#include "config/load.hpp"

#include <fmt/format.h>

#include "config/parse.hpp"
#include "config/schema.hpp"
#include "config/yaml_reader.hpp"

namespace podsim::config {

namespace fs = std::filesystem;
using core::Diagnostics;
using core::Dimension;
using detail::MapReader;
using hardware::topology_key;

hardware::TopologySpec parse_topology(const YAML::Node& node, const std::string& file,
                                      const std::string& path, Diagnostics& d) {
    hardware::TopologySpec t;
    MapReader r(node, file, path, d, keys_under(topology_schema(), ""));
    if (!r.ok()) return t;
    check_schema(r, "podsim.topology/v1");
    t.name = r.string(topology_key("name")).value_or("");
    auto sub = [&](const std::string& key) { return r.path_of(key); };

    if (!r.has("chip")) r.error("chip", "missing required key");
    MapReader chip(r.has("chip") ? r.raw("chip") : YAML::Node(YAML::NodeType::Map), file, sub("chip"), d,
                   keys_under(topology_schema(), "chip"));
    if (chip.ok() && r.has("chip")) {
        t.chip.name = chip.string("name", false).value_or(t.name);
        if (!chip.has("peak_flops")) {
            chip.error("peak_flops", "missing required key");
        } else {
            MapReader peaks(chip.raw("peak_flops"), file, chip.path_of("peak_flops"), d, core::dtype_names());
            if (peaks.ok()) {
                for (const auto& name : core::dtype_names()) {
                    if (auto v = peaks.quantity(name, Dimension::flop_rate, false)) {
                        if (peaks.check_bounds(topology_key("chip.peak_flops"), *v, name))
                            t.chip.peak_flops[*core::parse_dtype(name)] = *v;
                    }
                }
                if (!t.chip.peak_flops.count(core::DType::bf16)) peaks.error("bf16", "missing required key");
            }
        }
        t.chip.hbm_capacity = chip.quantity(topology_key("chip.hbm_capacity")).value_or(0);
        t.chip.hbm_bytes_limit = chip.quantity(topology_key("chip.hbm_bytes_limit")).value_or(0);
        if (t.chip.hbm_bytes_limit > t.chip.hbm_capacity && t.chip.hbm_capacity > 0)
            chip.error("hbm_bytes_limit",
                       "above hbm_capacity: the runtime cannot grant more than the chip has");
        t.chip.hbm_bandwidth = chip.quantity(topology_key("chip.hbm_bandwidth")).value_or(0);
        t.chip.mxu_tile =
            static_cast<int>(chip.integer(topology_key("chip.mxu_tile")).value_or(t.chip.mxu_tile));
        t.chip.tensorcores_per_chip = static_cast<int>(
            chip.integer(topology_key("chip.tensorcores_per_chip")).value_or(t.chip.tensorcores_per_chip));
        t.chip.devices_per_chip = static_cast<int>(
            chip.integer(topology_key("chip.devices_per_chip")).value_or(t.chip.devices_per_chip));
        t.chip.intra_chip_bandwidth = chip.quantity(topology_key("chip.intra_chip_bandwidth")).value_or(0);
        t.chip.streaming_multiprocessors =
            static_cast<int>(chip.integer(topology_key("chip.streaming_multiprocessors"))
                                 .value_or(t.chip.streaming_multiprocessors));
        if (t.chip.devices_per_chip > t.chip.tensorcores_per_chip) {
            chip.error("devices_per_chip",
                       fmt::format("{} devices per chip but only {} TensorCores (tensorcores_per_chip)",
                                   t.chip.devices_per_chip, t.chip.tensorcores_per_chip));
        }
        if (t.chip.devices_per_chip > 1 && t.chip.intra_chip_bandwidth <= 0) {
            chip.error("intra_chip_bandwidth",
                       fmt::format("required with devices_per_chip {}: collectives between the devices of "
                                   "one chip move at it",
                                   t.chip.devices_per_chip));
        }
        chip.quantity(topology_key("chip.clock"));
    }

    if (!r.has("ici")) r.error("ici", "missing required key");
    MapReader ici(r.has("ici") ? r.raw("ici") : YAML::Node(YAML::NodeType::Map), file, sub("ici"), d,
                  keys_under(topology_schema(), "ici"));
    if (ici.ok() && r.has("ici")) {
        t.ici.dims = static_cast<int>(ici.integer(topology_key("ici.dims")).value_or(t.ici.dims));
        t.ici.link_bandwidth = ici.quantity(topology_key("ici.link_bandwidth")).value_or(0);
        t.ici.hop_latency = ici.quantity(topology_key("ici.hop_latency")).value_or(0);
        if (auto w = ici.choice(topology_key("ici.wraparound")))
            t.ici.wraparound = static_cast<hardware::WraparoundRule>(*w);
        if (auto s = ici.string(topology_key("ici.max_slice"))) {
            if (auto shape = hardware::parse_slice_shape(*s)) {
                if (ici.check_bounds(topology_key("ici.max_slice"), static_cast<double>(shape->chips())))
                    t.ici.max_slice = *shape;
            } else {
                ici.error("max_slice", fmt::format("'{}' is not a shape like 16x16x16", *s));
            }
        }
        t.ici.twisted_torus = ici.boolean(topology_key("ici.twisted_torus")).value_or(t.ici.twisted_torus);
        // The devices of a chip form one more dimension of the device grid (network/torus.hpp).
        if (t.chip.devices_per_chip > 1 && t.ici.dims >= 4) {
            ici.error("dims",
                      fmt::format("{} torus dimensions and {} devices per chip make {} grid dimensions; "
                                  "podsim handles at most 4",
                                  t.ici.dims, t.chip.devices_per_chip, t.ici.dims + 1));
        }
    }

    if (r.has("host")) {
        MapReader host(r.raw("host"), file, sub("host"), d, keys_under(topology_schema(), "host"));
        t.host.chips_per_host = static_cast<int>(
            host.integer(topology_key("host.chips_per_host")).value_or(t.host.chips_per_host));
        t.host.host_memory = host.quantity(topology_key("host.host_memory")).value_or(0);
        t.host.transfer_bandwidth_per_chip =
            host.quantity(topology_key("host.transfer_bandwidth_per_chip")).value_or(0);
    }
    if (r.has("dcn")) {
        MapReader dcn(r.raw("dcn"), file, sub("dcn"), d, keys_under(topology_schema(), "dcn"));
        t.dcn.bandwidth_per_chip = dcn.quantity(topology_key("dcn.bandwidth_per_chip")).value_or(0);
        if (auto per_host = dcn.quantity(topology_key("dcn.bandwidth_per_host"))) {
            if (dcn.has("bandwidth_per_chip")) {
                dcn.error("bandwidth_per_host", "give bandwidth_per_chip or bandwidth_per_host, not both");
            }
            t.dcn.bandwidth_per_chip = *per_host / std::max(1, t.host.chips_per_host);
        }
        t.dcn.latency = dcn.quantity(topology_key("dcn.latency")).value_or(t.dcn.latency);
    }
    return t;
}

hardware::TopologySpec load_topology_file(const std::string& path) {
    Diagnostics d;
    YAML::Node root = detail::load_yaml_file(path, d);
    hardware::TopologySpec t;
    if (d.empty()) t = parse_topology(root, path, "", d);
    core::throw_if_errors(d);
    return t;
}

}  // namespace podsim::config
