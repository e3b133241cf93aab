#include "scheduler/scheduler.hpp"

#include <memory>

#include "core/assert.hpp"
#include "core/engine.hpp"
#include "network/flow_network.hpp"

namespace podsim::scheduler {
namespace {

class ProgramRun final : public core::EventHandler, public network::TransferListener {
  public:
    ProgramRun(const parallel::DeviceProgram& program, const std::vector<cost::OpCost>& costs,
               bool synchronous, const NetworkInput* network)
        : program_(program), network_input_(network) {
        if (network) network_ = std::make_unique<network::FlowNetwork>(engine_, network->link_bandwidth);
        const std::size_t n = program.ops.size();
        durations_.resize(n);
        for (std::size_t i = 0; i < n; ++i) durations_[i] = core::from_seconds(costs[i].seconds);
        build_dependencies(synchronous);
        queues_.resize(program.resources.size());
        for (std::size_t i = 0; i < n; ++i) {
            queues_[static_cast<std::size_t>(program.ops[i].resource)].push_back(static_cast<int>(i));
        }
        heads_.assign(queues_.size(), 0);
        busy_.assign(queues_.size(), false);
        timeline_.spans.resize(n);
    }

    Timeline run() {
        for (std::size_t r = 0; r < queues_.size(); ++r) try_start(static_cast<int>(r));
        timeline_.step_time = engine_.run();
        timeline_.events = engine_.events_processed();
        if (network_) timeline_.link_bytes = network_->link_bytes();
        for (std::size_t r = 0; r < queues_.size(); ++r) {
            PODSIM_ASSERT(heads_[r] == queues_[r].size(), "deadlock: an op never became ready");
        }
        return std::move(timeline_);
    }

    void on_event(core::Time now, std::uint64_t tag) override {
        complete(now, static_cast<std::size_t>(tag));
    }
    void on_transfer_done(core::Time now, std::uint64_t tag) override {
        complete(now, static_cast<std::size_t>(tag));
    }

  private:
    void complete(core::Time now, std::size_t op) {
        const auto resource = static_cast<std::size_t>(program_.ops[op].resource);
        timeline_.spans[op].end = now;
        busy_[resource] = false;
        ++heads_[resource];
        for (std::size_t e = succ_begin_[op]; e < succ_begin_[op + 1]; ++e) {
            const auto s = static_cast<std::size_t>(successors_[e]);
            if (--pending_[s] == 0) try_start(program_.ops[s].resource);
        }
        try_start(static_cast<int>(resource));
    }

    void build_dependencies(bool synchronous) {
        const std::size_t n = program_.ops.size();
        std::vector<std::vector<int>> deps(n);
        int last_compute = -1;
        std::vector<int> since_compute;  // collectives issued since the last compute op
        for (std::size_t i = 0; i < n; ++i) {
            const auto& op = program_.ops[i];
            deps[i] = op.deps;
            if (!synchronous) continue;
            if (parallel::is_collective(op.category)) {
                if (last_compute >= 0) deps[i].push_back(last_compute);
                since_compute.push_back(static_cast<int>(i));
            } else if (op.category == parallel::OpCategory::matmul ||
                       op.category == parallel::OpCategory::fusion) {
                deps[i].insert(deps[i].end(), since_compute.begin(), since_compute.end());
                since_compute.clear();
                last_compute = static_cast<int>(i);
            }
        }
        pending_.assign(n, 0);
        succ_begin_.assign(n + 1, 0);
        for (std::size_t i = 0; i < n; ++i) {
            for (int d : deps[i]) {
                PODSIM_ASSERT(d >= 0 && static_cast<std::size_t>(d) < i,
                              "dependency not earlier in program order");
                ++succ_begin_[static_cast<std::size_t>(d) + 1];
            }
            pending_[i] = static_cast<int>(deps[i].size());
        }
        for (std::size_t i = 0; i < n; ++i) succ_begin_[i + 1] += succ_begin_[i];
        successors_.resize(succ_begin_[n]);
        std::vector<std::size_t> fill(succ_begin_.begin(), succ_begin_.end() - 1);
        for (std::size_t i = 0; i < n; ++i) {
            for (int d : deps[i]) successors_[fill[static_cast<std::size_t>(d)]++] = static_cast<int>(i);
        }
    }

    void try_start(int resource) {
        const auto r = static_cast<std::size_t>(resource);
        if (busy_[r] || heads_[r] >= queues_[r].size()) return;
        const auto op = static_cast<std::size_t>(queues_[r][heads_[r]]);
        if (pending_[op] != 0) return;
        busy_[r] = true;
        timeline_.spans[op] = Span{static_cast<int>(op), resource, engine_.now(), engine_.now()};
        if (network_ && network_input_->plan_of_op[op] != nullptr) {
            network_->start(network_input_->plan_of_op[op]->phases, *this, op);
        } else {
            engine_.schedule_after(durations_[op], *this, op);
        }
    }

    const parallel::DeviceProgram& program_;
    const NetworkInput* network_input_;
    core::Engine engine_;
    std::unique_ptr<network::FlowNetwork> network_;
    std::vector<core::Time> durations_;
    std::vector<int> pending_;
    std::vector<std::size_t> succ_begin_;
    std::vector<int> successors_;
    std::vector<std::vector<int>> queues_;
    std::vector<std::size_t> heads_;
    std::vector<bool> busy_;
    Timeline timeline_;
};

}  // namespace

Timeline schedule(const parallel::DeviceProgram& program, const std::vector<cost::OpCost>& costs,
                  const parallel::RuntimeSpec& runtime, const NetworkInput* network) {
    PODSIM_ASSERT(costs.size() == program.ops.size(), "one cost per op");
    PODSIM_ASSERT(!network || network->plan_of_op.size() == program.ops.size(), "one plan slot per op");
    for (std::size_t i = 0; i < program.ops.size(); ++i) {
        const auto& resource = program.resources[static_cast<std::size_t>(program.ops[i].resource)];
        PODSIM_ASSERT(resource.kind != parallel::ResourceKind::ici || costs[i].seconds > 0.0 ||
                          (network && network->plan_of_op[i] != nullptr),
                      "an ICI collective with neither a plan nor a cost");
    }
    ProgramRun run(program, costs, !runtime.async(), network);
    return run.run();
}

}  // namespace podsim::scheduler
