#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "core/time.hpp"
#include "network/flow.hpp"
#include "network/flow_network.hpp"

namespace podsim::scheduler {

// A collective's flows run on links no other transfer can use while it runs: the flow network then
// evolves the same way whenever it starts (it only ever sees time differences, in integer
// picoseconds), so one run alone gives its duration, events and link bytes for every occurrence.
struct TransferAlone {
    core::Time duration = 0;
    std::uint64_t events = 0;                        // events the flow network processed
    std::vector<std::pair<int, double>> link_bytes;  // (torus link id, bytes carried)
};

// `scratch` holds at least one entry per link (FlowNetwork::Scratch). Without `count_link_bytes`
// the link bytes stay empty: counting them clears and scans an array of every torus link (a few
// percent of a 175B sweep on 4,096 chips), for reports that do not show them.
TransferAlone run_alone(const std::vector<network::FlowPhase>& phases,
                        const std::vector<double>& link_bandwidth, network::FlowNetwork::Scratch& scratch,
                        bool count_link_bytes = true);

}  // namespace podsim::scheduler
