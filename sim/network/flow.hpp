#pragma once

#include <cstdint>
#include <vector>

namespace podsim::network {

// Bytes moving over a fixed path of directed torus links, at whatever rate the network gives them.
struct Flow {
    std::vector<int> links;  // Torus link ids, in path order
    double bytes = 0.0;
    // Nonzero: flows with the same id have the same links (run::SimulationCache numbers the paths of
    // the plans it keeps), so the rate memo of FlowNetwork::Scratch matches flow sets of plans that
    // differ only in bytes. Zero: the flow is known by its address.
    std::uint32_t path_id = 0;
};

// A step of a transfer: after `latency`, all flows run concurrently; the phase ends when the last
// one has arrived.
struct FlowPhase {
    double latency = 0.0;  // seconds: hops x hop latency (plus, on the first phase, the launch overhead)
    std::vector<Flow> flows;
};

}  // namespace podsim::network
