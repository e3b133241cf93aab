#include "run/collective_run.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "core/diagnostics.hpp"
#include "core/engine.hpp"
#include "hardware/topology_spec.hpp"
#include "network/flow_network.hpp"

namespace podsim::run {
namespace {

struct Finish final : network::TransferListener {
    std::vector<core::Time> done;
    void on_transfer_done(core::Time now, std::uint64_t tag) override {
        done[static_cast<std::size_t>(tag)] = now;
    }
};

[[noreturn]] void fail(const std::string& what, const std::string& message) {
    core::Diagnostics d;
    d.error({"podsim collective", 0, 0}, what, message);
    throw core::UserError(d);
}

}  // namespace

double bus_bandwidth_factor(collectives::CollectiveKind kind, int n) {
    if (n <= 1) return 0.0;
    const double f = static_cast<double>(n - 1) / n;
    switch (kind) {
        case collectives::CollectiveKind::all_reduce:
            return 2.0 * f;
        case collectives::CollectiveKind::collective_permute:
            return 1.0;
        default:
            return f;
    }
}

std::vector<double> run_concurrently(const network::Torus& torus,
                                     const std::vector<collectives::CommPlan>& plans,
                                     double link_efficiency) {
    core::Engine engine;
    network::FlowNetwork network(engine, network::effective_link_bandwidth(torus, link_efficiency));
    Finish finish;
    finish.done.assign(plans.size(), 0);
    for (std::size_t i = 0; i < plans.size(); ++i) network.start(plans[i].phases, finish, i);
    engine.run();
    std::vector<double> out;
    for (auto t : finish.done) out.push_back(core::to_seconds(t));
    return out;
}

CollectiveResult run_collective(const CollectiveRequest& r) {
    if (auto error = hardware::slice_shape_error(r.topology, r.slice)) fail("--slice", *error);
    auto mapped = network::map_mesh_axes(r.topology, r.slice, r.mesh);
    if (auto* error = std::get_if<std::string>(&mapped)) fail("--mesh", *error);
    const auto& mapping = std::get<std::vector<network::AxisMapping>>(mapped);

    CollectiveResult result;
    network::AxisMapping combined;
    for (const auto& name : r.axes) {
        auto it = std::find_if(mapping.begin(), mapping.end(), [&](const auto& a) { return a.axis == name; });
        if (it == mapping.end())
            fail("--axis", fmt::format("'{}' is not an axis of --mesh {}", name, r.mesh.to_string()));
        combined.parts.insert(combined.parts.end(), it->parts.begin(), it->parts.end());
        result.group_size *= it->size;
    }
    result.parts = combined.parts;
    network::Torus torus(r.topology, r.slice, r.twisted);
    result.groups = torus.groups(combined);
    result.plan = collectives::plan_collective(
        torus, r.kind, r.bytes, combined.parts,
        r.topology.ici.hop_latency * r.calibration.ici_hop_latency_factor, r.calibration.collective_overhead);
    const double link_bandwidth = r.topology.ici.link_bandwidth * r.calibration.ici_link_efficiency;

    core::Engine engine;
    const std::vector<double> bandwidth =
        network::effective_link_bandwidth(torus, r.calibration.ici_link_efficiency);
    network::FlowNetwork network(engine, bandwidth);
    Finish finish;
    finish.done.assign(1, 0);
    try {
        network.start(result.plan.phases, finish, 0);
        engine.run();
    } catch (const core::TimeOverflow& e) {
        fail("--bytes", e.what());
    }
    result.time_s = core::to_seconds(finish.done[0]);
    result.closed_form_s =
        collectives::closed_form_ici(r.kind, r.bytes, combined.parts, link_bandwidth,
                                     r.topology.ici.hop_latency * r.calibration.ici_hop_latency_factor,
                                     collectives::IntraChipLink{hardware::intra_chip_dimension(r.topology),
                                                                r.topology.chip.intra_chip_bandwidth})
            .time +
        (result.group_size > 1 ? r.calibration.collective_overhead : 0.0);
    if (result.time_s > 0) {
        result.algorithm_bandwidth = r.bytes / result.time_s;
        result.bus_bandwidth = result.algorithm_bandwidth * bus_bandwidth_factor(r.kind, result.group_size);
    }
    // Per-link utilisation over the representative lines, by dimension and direction.
    const auto& bytes = network.link_bytes();
    for (int dim = 0; dim < static_cast<int>(torus.shape().size()); ++dim) {
        for (int direction : {+1, -1}) {
            LinkUse use{dim, direction, 0, 0.0, 0.0, 0.0};
            double total = 0.0;
            double dim_bandwidth = link_bandwidth;  // intra-chip links have their own
            for (std::size_t l = 0; l < torus.links().size(); ++l) {
                const auto& link = torus.links()[l];
                if (link.dim != dim || link.direction != direction || bytes[l] <= 0.0) continue;
                ++use.links_used;
                total += bytes[l];
                use.max_bytes = std::max(use.max_bytes, bytes[l]);
                dim_bandwidth = bandwidth[l];
            }
            if (use.links_used == 0 || result.time_s <= 0) continue;
            use.max_utilization = use.max_bytes / (result.time_s * dim_bandwidth);
            use.mean_utilization = total / use.links_used / (result.time_s * dim_bandwidth);
            result.links.push_back(use);
        }
    }
    return result;
}

}  // namespace podsim::run
