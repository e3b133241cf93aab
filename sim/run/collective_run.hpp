#pragma once

#include <string>
#include <vector>

#include "collectives/closed_form.hpp"
#include "collectives/comm_plan.hpp"
#include "cost/calibration.hpp"
#include "hardware/topology_spec.hpp"
#include "network/axis_mapping.hpp"
#include "network/mesh_spec.hpp"
#include "network/torus.hpp"

namespace podsim::run {

struct CollectiveRequest {
    hardware::TopologySpec topology;
    hardware::SliceShape slice;
    network::MeshSpec mesh;  // free axis names
    collectives::CollectiveKind kind = collectives::CollectiveKind::all_gather;
    std::vector<std::string> axes;  // the collective runs over these mesh axes together
    double bytes = 0.0;             // the full array, as the scaling book counts it
    bool twisted = false;
    cost::Calibration calibration = cost::Calibration::defaults();
};

struct LinkUse {
    int dim = 0;
    int direction = 0;
    int links_used = 0;
    double max_bytes = 0.0;
    double max_utilization = 0.0;   // busiest link: bytes / (time x bandwidth)
    double mean_utilization = 0.0;  // over the links of this dimension and direction that carried data
};

struct CollectiveResult {
    double time_s = 0.0;
    double closed_form_s = 0.0;  // the scaling-book oracle, for comparison
    int group_size = 1;
    double algorithm_bandwidth = 0.0;  // bytes / time
    double bus_bandwidth = 0.0;        // NCCL convention: algbw x (n-1)/n, x 2(n-1)/n for all-reduce
    std::vector<network::AxisDimPart> parts;
    std::vector<LinkUse> links;
    std::vector<std::vector<int>> groups;
    collectives::CommPlan plan;
};

// Simulates one collective alone on the slice (the flow network, not the closed form). Throws
// core::UserError when the mesh does not fit the slice or names an unknown axis.
CollectiveResult run_collective(const CollectiveRequest& request);

// Simulates several plans started at the same instant on one torus; returns each one's time (s).
std::vector<double> run_concurrently(const network::Torus& torus,
                                     const std::vector<collectives::CommPlan>& plans, double link_efficiency);

double bus_bandwidth_factor(collectives::CollectiveKind kind, int group_size);

}  // namespace podsim::run
