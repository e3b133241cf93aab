#include "scheduler/transfer_alone.hpp"

#include "core/engine.hpp"
#include "network/flow_network.hpp"

namespace podsim::scheduler {
namespace {

struct Done final : network::TransferListener {
    core::Time at = 0;
    void on_transfer_done(core::Time now, std::uint64_t) override { at = now; }
};

}  // namespace

TransferAlone run_alone(const std::vector<network::FlowPhase>& phases,
                        const std::vector<double>& link_bandwidth, network::FlowNetwork::Scratch& scratch,
                        bool count_link_bytes) {
    core::Engine engine;
    network::FlowNetwork net(engine, link_bandwidth, scratch, count_link_bytes);
    Done done;
    net.start(phases, done, 0);
    engine.run();
    TransferAlone alone;
    alone.duration = done.at;
    alone.events = engine.events_processed();
    const auto& bytes = net.link_bytes();
    for (std::size_t l = 0; l < bytes.size(); ++l) {
        if (bytes[l] != 0.0) alone.link_bytes.emplace_back(static_cast<int>(l), bytes[l]);
    }
    return alone;
}

}  // namespace podsim::scheduler
