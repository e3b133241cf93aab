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

hardware::TopologySpec parse_topology(const YAML::Node& node, const std::string& file,
                                      const std::string& path, Diagnostics& d) {
    hardware::TopologySpec t;
    MapReader r(node, file, path, d, keys_under(topology_schema(), ""));
    if (!r.ok()) return t;
    check_schema(r, "podsim.topology/v1");
    t.name = r.string("name", true).value_or("");
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
                        if (*v <= 0) {
                            peaks.error(name, "must be positive");
                        } else {
                            t.chip.peak_flops[*core::parse_dtype(name)] = *v;
                        }
                    }
                }
                if (!t.chip.peak_flops.count(core::DType::bf16)) peaks.error("bf16", "missing required key");
            }
        }
        t.chip.hbm_capacity = chip.quantity("hbm_capacity", Dimension::bytes, true).value_or(0);
        t.chip.hbm_bandwidth = chip.quantity("hbm_bandwidth", Dimension::bandwidth, true).value_or(0);
        if (chip.has("hbm_capacity") && t.chip.hbm_capacity <= 0)
            chip.error("hbm_capacity", "must be positive");
        if (chip.has("hbm_bandwidth") && t.chip.hbm_bandwidth <= 0)
            chip.error("hbm_bandwidth", "must be positive");
        t.chip.mxu_tile = static_cast<int>(chip.integer("mxu_tile", false).value_or(128));
        t.chip.tensorcores = static_cast<int>(chip.integer("tensorcores", false).value_or(1));
        chip.quantity("clock", Dimension::frequency, false);
    }

    if (!r.has("ici")) r.error("ici", "missing required key");
    MapReader ici(r.has("ici") ? r.raw("ici") : YAML::Node(YAML::NodeType::Map), file, sub("ici"), d,
                  keys_under(topology_schema(), "ici"));
    if (ici.ok() && r.has("ici")) {
        t.ici.dims = static_cast<int>(ici.integer("dims", false).value_or(3));
        if (t.ici.dims > 4) ici.error("dims", "at most 4 torus dimensions");
        t.ici.link_bandwidth = ici.quantity("link_bandwidth", Dimension::bandwidth, true).value_or(0);
        if (ici.has("link_bandwidth") && t.ici.link_bandwidth <= 0)
            ici.error("link_bandwidth", "must be positive");
        t.ici.hop_latency = ici.quantity("hop_latency", Dimension::time, true).value_or(0);
        if (auto w = ici.choice("wraparound", {"always", "none", "whole_cubes_of_4", "length_16"}, false)) {
            t.ici.wraparound = static_cast<hardware::WraparoundRule>(*w);
        } else {
            t.ici.wraparound = hardware::WraparoundRule::always;
        }
        if (auto s = ici.string("max_slice", true)) {
            if (auto shape = hardware::parse_slice_shape(*s)) {
                t.ici.max_slice = *shape;
            } else {
                ici.error("max_slice", fmt::format("'{}' is not a shape like 16x16x16", *s));
            }
        }
        t.ici.twisted_torus = ici.boolean("twisted_torus").value_or(false);
    }

    if (r.has("host")) {
        MapReader host(r.raw("host"), file, sub("host"), d, keys_under(topology_schema(), "host"));
        t.host.chips_per_host = static_cast<int>(host.integer("chips_per_host", false).value_or(4));
        t.host.host_memory = host.quantity("host_memory", Dimension::bytes, false).value_or(0);
        t.host.transfer_bandwidth_per_chip =
            host.quantity("transfer_bandwidth_per_chip", Dimension::bandwidth, false).value_or(0);
    }
    if (r.has("dcn")) {
        MapReader dcn(r.raw("dcn"), file, sub("dcn"), d, keys_under(topology_schema(), "dcn"));
        t.dcn.bandwidth_per_chip =
            dcn.quantity("bandwidth_per_chip", Dimension::bandwidth, false).value_or(0);
        if (auto per_host = dcn.quantity("bandwidth_per_host", Dimension::bandwidth, false)) {
            if (dcn.has("bandwidth_per_chip")) {
                dcn.error("bandwidth_per_host", "give bandwidth_per_chip or bandwidth_per_host, not both");
            }
            t.dcn.bandwidth_per_chip = *per_host / std::max(1, t.host.chips_per_host);
        }
        t.dcn.latency = dcn.quantity("latency", Dimension::time, false).value_or(0);
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
