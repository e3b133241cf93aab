#include "cli/commands.hpp"

#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "core/quantity.hpp"
#include "podsim/podsim.hpp"
#include "report/format.hpp"
#include "report/torus_svg.hpp"

namespace podsim::cli {
namespace {

struct CollectiveOptions {
    std::string topology = "tpu-v4", slice, mesh, op = "all-gather", axis, bytes = "64MiB", sweep,
                format = "table", svg;
    bool twisted = false;
};

double parse_bytes(const std::string& option, const std::string& text) {
    auto q = core::parse_quantity(text, core::Dimension::bytes);
    if (!q.ok) option_error("podsim collective", option, q.error);
    if (q.value <= 0) option_error("podsim collective", option, "must be positive");
    return q.value;
}

int command_collective(const CollectiveOptions& o) {
    podsim::CollectiveQuery query;
    query.topology = o.topology;
    query.slice = o.slice;
    query.mesh = o.mesh;
    query.op = o.op;
    query.axis = o.axis;
    query.bytes = o.bytes;
    query.twisted = o.twisted;
    podsim::CollectiveRequest request = podsim::collective_request(query);

    std::vector<double> sizes;
    if (!o.sweep.empty()) {
        auto dots = o.sweep.find("..");
        if (dots == std::string::npos)
            option_error("podsim collective", "--sweep-bytes", "write a range such as 1KiB..4GiB");
        double lo = parse_bytes("--sweep-bytes", o.sweep.substr(0, dots));
        double hi = parse_bytes("--sweep-bytes", o.sweep.substr(dots + 2));
        if (lo > hi)
            option_error("podsim collective", "--sweep-bytes",
                         fmt::format("the range starts above its end ({:.0f} > {:.0f} bytes)", lo, hi));
        // Doubling: 64 sizes span a factor of 2^63, more than any range of bytes worth timing.
        constexpr std::size_t kMaxSizes = 64;
        for (double b = lo; b <= hi * (1 + 1e-9); b *= 2) {
            if (sizes.size() == kMaxSizes)
                option_error("podsim collective", "--sweep-bytes",
                             fmt::format("the range spans more than {} doublings", kMaxSizes));
            sizes.push_back(b);
        }
    } else {
        sizes.push_back(request.bytes);
    }

    if (!o.sweep.empty() || o.format == "csv") {
        std::cout << "bytes,time_s,closed_form_s,algorithm_bandwidth_bytes_per_s,bus_bandwidth_bytes_per_s\n";
    }
    for (double bytes : sizes) {
        request.bytes = bytes;
        podsim::CollectiveResult r = podsim::run_collective(request);
        if (!o.sweep.empty() || o.format == "csv") {
            std::cout << fmt::format("{:.0f},{:.9g},{:.9g},{:.6g},{:.6g}\n", bytes, r.time_s, r.closed_form_s,
                                     r.algorithm_bandwidth, r.bus_bandwidth);
            continue;
        }
        if (o.format == "json") {
            std::cout << podsim::collective_json(request, r);
        } else {
            // Torus dimensions by letter; the devices of one chip (v2/v3) as "core".
            const int intra_chip = hardware::intra_chip_dimension(request.topology);
            auto dim_name = [&](int dim) {
                return dim == intra_chip ? std::string("core") : std::string(1, "xyzw"[dim]);
            };
            std::string placement;
            for (const auto& p : r.parts) {
                placement += fmt::format(" {}:{}{}{}", dim_name(p.dim), p.size,
                                         p.stride > 1 ? fmt::format("/stride {}", p.stride) : "",
                                         p.wraps ? " ring" : " line");
            }
            std::cout << fmt::format("{} of {} over {} ({} {}:{}) on {} {}\n", o.op,
                                     core::format_bytes(bytes), fmt::join(request.axes, ","), r.group_size,
                                     request.topology.chip.devices_per_chip > 1 ? "devices" : "chips",
                                     placement, request.topology.name, request.slice.to_string());
            std::cout << fmt::format("  time                 {}  (closed form {})\n",
                                     core::format_seconds(r.time_s), core::format_seconds(r.closed_form_s));
            std::cout << fmt::format(
                "  algorithm bandwidth  {}\n  bus bandwidth        {}\n  phases               {}\n",
                core::format_bandwidth(r.algorithm_bandwidth), core::format_bandwidth(r.bus_bandwidth),
                r.plan.phases.size());
            std::cout << "  link utilisation (representative line of each dimension)\n";
            for (const auto& l : r.links) {
                std::cout << fmt::format(
                    "    {}{}  {:>3} links  busiest {:5.1f}%  mean {:5.1f}%  ({} on the busiest)\n",
                    dim_name(l.dim), l.direction > 0 ? "+" : "-", l.links_used, 100 * l.max_utilization,
                    100 * l.mean_utilization, core::format_bytes(l.max_bytes));
            }
        }
        if (!o.svg.empty()) {
            network::Torus torus(request.topology, request.slice, request.twisted);
            write_file(o.svg,
                       report::torus_svg(torus, r.groups, r.parts,
                                         fmt::format("{} over {} on {} {}: each colour is one group's rings",
                                                     o.op, fmt::join(request.axes, ","),
                                                     request.topology.name, request.slice.to_string())));
        }
    }
    return 0;
}

}  // namespace

Command add_collective_command(CLI::App& app) {
    auto o = std::make_shared<CollectiveOptions>();
    auto* cmd = app.add_subcommand("collective", "simulate one collective on a slice (microbenchmark)");
    cmd->add_option("--topology", o->topology, "topology name or file");
    cmd->add_option("--slice", o->slice, "slice shape, e.g. 4x4x4")->required();
    cmd->add_option("--mesh", o->mesh, "mesh axes, e.g. fsdp=16,tensor=4 (names are free)");
    cmd->add_option("--op", o->op, "all-gather, reduce-scatter, all-reduce, all-to-all, collective-permute");
    cmd->add_option("--axis", o->axis, "mesh axis (or axes, comma-separated) the collective runs over");
    cmd->add_option("--bytes", o->bytes, "the full array (all-gather output, all-reduce input), e.g. 64MiB");
    cmd->add_option("--sweep-bytes", o->sweep, "a range such as 1KiB..4GiB, doubling; prints CSV");
    cmd->add_option("--format", o->format, "table, json or csv")
        ->check(CLI::IsMember({"table", "json", "csv"}));
    cmd->add_flag("--twisted", o->twisted, "use the twisted torus where the shape allows it");
    cmd->add_option("--svg", o->svg, "write a picture of the groups' rings (x-y plane)");
    return {cmd, [o] { return command_collective(*o); }};
}

}  // namespace podsim::cli
