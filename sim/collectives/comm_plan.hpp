#pragma once

#include <vector>

#include "collectives/collective_kind.hpp"
#include "network/flow.hpp"
#include "network/torus.hpp"

namespace podsim::collectives {

// A collective's flows and phases, as the flow network (network/flow_network.hpp) runs them.
using Flow = network::Flow;
using CommPhase = network::FlowPhase;

struct CommPlan {
    CollectiveKind kind = CollectiveKind::all_gather;
    double bytes = 0.0;  // the full array (as in closed_form.hpp)
    int group_size = 1;
    std::vector<CommPhase> phases;
    std::vector<int> links;  // every link a flow of any phase crosses, sorted, each once
};

// Lowers a collective over the mesh-axis placement `parts` onto the torus links.
//  - Per dimension: a bidirectional ring when the group closes over wraparound links (each member
//    sends half of the data each way, (n-1)/2n of the gathered bytes per direction), a bidirectional
//    line when it does not (the link after member i carries the shards of members 0..i).
//  - An axis spanning k dimensions splits the data into k parts that walk the dimensions in rotated
//    orders, so that every stage uses all k dimensions at once (scaling book, "bandwidth divided
//    by k"); each stage is a phase.
//  - reduce-scatter runs the all-gather's stages in reverse; all-reduce is reduce-scatter up the
//    dimensions, then all-gather back down; all-to-all exchanges along one dimension at a time
//    (dimension-ordered routing, shortest way round); collective-permute sends to the next member.
// SPMD symmetry: every line of chips along a dimension carries the same traffic, so only the line
// through the origin is planned, with every group of the axis that lies on it (groups of a split
// dimension share its links). Traffic never leaves its dimension, so lines of different dimensions
// never share links, and one representative line per dimension is exact for the whole slice.
CommPlan plan_collective(const network::Torus& torus, CollectiveKind kind, double bytes,
                         const std::vector<network::AxisDimPart>& parts, double hop_latency,
                         double launch_overhead);

}  // namespace podsim::collectives
