#pragma once

#include <vector>

namespace podsim::network {

// Bytes moving over a fixed path of directed torus links, at whatever rate the network gives them.
struct Flow {
    std::vector<int> links;  // Torus link ids, in path order
    double bytes = 0.0;
};

// A step of a transfer: after `latency`, all flows run concurrently; the phase ends when the last
// one has arrived.
struct FlowPhase {
    double latency = 0.0;  // seconds: hops x hop latency (plus, on the first phase, the launch overhead)
    std::vector<Flow> flows;
};

}  // namespace podsim::network
