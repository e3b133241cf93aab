#include "scheduler/scheduler.hpp"

#include <algorithm>
#include <memory>
#include <numeric>

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
        if (network) {
            int count = 1;
            for (int c : network->network_of_op) count = std::max(count, c + 1);
            networks_.resize(static_cast<std::size_t>(count));  // made when first used
            alone_link_bytes_.assign(network->link_bandwidth.size(), 0.0);
        }
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
        timeline_.events = engine_.events_processed() + replayed_events_;
        if (network_input_) {
            timeline_.link_bytes = std::move(alone_link_bytes_);
            for (const auto& net : networks_) {
                if (!net) continue;
                const auto& bytes = net->link_bytes();
                for (std::size_t l = 0; l < bytes.size(); ++l) timeline_.link_bytes[l] += bytes[l];
            }
        }
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
        // Synchronous collectives also wait for the compute before them, and compute waits for the
        // collectives issued since the last compute: extra edges beside each op's own deps.
        const std::size_t n = program_.ops.size();
        std::vector<std::pair<int, int>> extra;  // (from, to)
        if (synchronous) {
            int last_compute = -1;
            std::vector<int> since_compute;  // collectives issued since the last compute op
            for (std::size_t i = 0; i < n; ++i) {
                const auto& op = program_.ops[i];
                if (parallel::is_collective(op.category)) {
                    if (last_compute >= 0) extra.emplace_back(last_compute, static_cast<int>(i));
                    since_compute.push_back(static_cast<int>(i));
                } else if (op.category == parallel::OpCategory::matmul ||
                           op.category == parallel::OpCategory::fusion) {
                    for (int c : since_compute) extra.emplace_back(c, static_cast<int>(i));
                    since_compute.clear();
                    last_compute = static_cast<int>(i);
                }
            }
        }
        pending_.assign(n, 0);
        succ_begin_.assign(n + 1, 0);
        auto count = [&](int from, std::size_t to) {
            PODSIM_ASSERT(from >= 0 && static_cast<std::size_t>(from) < to,
                          "dependency not earlier in program order");
            ++succ_begin_[static_cast<std::size_t>(from) + 1];
            ++pending_[to];
        };
        for (std::size_t i = 0; i < n; ++i)
            for (int d : program_.ops[i].deps) count(d, i);
        for (const auto& [from, to] : extra) count(from, static_cast<std::size_t>(to));
        for (std::size_t i = 0; i < n; ++i) succ_begin_[i + 1] += succ_begin_[i];
        successors_.resize(succ_begin_[n]);
        std::vector<std::size_t> fill(succ_begin_.begin(), succ_begin_.end() - 1);
        // Successors of each op in the order the old adjacency lists gave: by successor, own deps first.
        std::size_t e = 0;
        for (std::size_t i = 0; i < n; ++i) {
            for (int d : program_.ops[i].deps)
                successors_[fill[static_cast<std::size_t>(d)]++] = static_cast<int>(i);
            for (; e < extra.size() && static_cast<std::size_t>(extra[e].second) == i; ++e)
                successors_[fill[static_cast<std::size_t>(extra[e].first)]++] = static_cast<int>(i);
        }
    }

    void try_start(int resource) {
        const auto r = static_cast<std::size_t>(resource);
        if (busy_[r] || heads_[r] >= queues_[r].size()) return;
        const auto op = static_cast<std::size_t>(queues_[r][heads_[r]]);
        if (pending_[op] != 0) return;
        busy_[r] = true;
        timeline_.spans[op] = Span{static_cast<int>(op), resource, engine_.now(), engine_.now()};
        const TransferAlone* alone = network_input_ && !network_input_->alone_of_op.empty()
                                         ? network_input_->alone_of_op[op]
                                         : nullptr;
        if (alone != nullptr) {
            for (const auto& [link, bytes] : alone->link_bytes)
                alone_link_bytes_[static_cast<std::size_t>(link)] += bytes;
            if (alone->events == 0) {  // no phase at all: the flow network completes it at once
                complete(engine_.now(), op);
                return;
            }
            // The replayed run's last event completes the transfer; this one event stands for all.
            replayed_events_ += alone->events - 1;
            engine_.schedule_after(alone->duration, *this, op);
        } else if (network_input_ && network_input_->plan_of_op[op] != nullptr) {
            const auto net = network_input_->network_of_op.empty()
                                 ? std::size_t{0}
                                 : static_cast<std::size_t>(network_input_->network_of_op[op]);
            if (!networks_[net]) {
                // Contention classes never reallocate at the same time: one scratch serves them all.
                if (!scratch_)
                    scratch_ = std::make_unique<network::FlowNetwork::Scratch>(
                        network_input_->link_bandwidth.size());
                networks_[net] = std::make_unique<network::FlowNetwork>(
                    engine_, network_input_->link_bandwidth, *scratch_);
            }
            networks_[net]->start(network_input_->plan_of_op[op]->phases, *this, op);
        } else {
            engine_.schedule_after(durations_[op], *this, op);
        }
    }

    const parallel::DeviceProgram& program_;
    const NetworkInput* network_input_;
    core::Engine engine_;
    std::unique_ptr<network::FlowNetwork::Scratch> scratch_;
    std::vector<std::unique_ptr<network::FlowNetwork>> networks_;  // one per contention class
    std::vector<double> alone_link_bytes_;  // bytes of the transfers taken from their run alone
    std::uint64_t replayed_events_ = 0;
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

ContentionClasses contention_classes(const parallel::DeviceProgram& program,
                                     const std::vector<const collectives::CommPlan*>& plan_of_op) {
    // Links of each comm axis, over all its plans.
    const std::size_t axes = program.comm_axes.size();
    std::vector<std::vector<int>> links(axes);
    std::vector<std::vector<const collectives::CommPlan*>> seen(axes);
    std::vector<int> resource_of_axis(axes, -1);
    std::vector<bool> one_resource(axes, true);
    for (std::size_t i = 0; i < program.ops.size(); ++i) {
        const collectives::CommPlan* plan = plan_of_op[i];
        if (plan == nullptr) continue;
        const auto a = static_cast<std::size_t>(program.ops[i].comm_axis);
        const int resource = program.ops[i].resource;
        if (resource_of_axis[a] < 0) resource_of_axis[a] = resource;
        one_resource[a] = one_resource[a] && resource_of_axis[a] == resource;
        if (std::find(seen[a].begin(), seen[a].end(), plan) != seen[a].end()) continue;
        seen[a].push_back(plan);
        for (const auto& phase : plan->phases)
            for (const auto& flow : phase.flows)
                links[a].insert(links[a].end(), flow.links.begin(), flow.links.end());
    }
    for (auto& l : links) {
        std::sort(l.begin(), l.end());
        l.erase(std::unique(l.begin(), l.end()), l.end());
    }
    // Union of axes that share a link or a resource.
    std::vector<std::size_t> parent(axes);
    std::iota(parent.begin(), parent.end(), std::size_t{0});
    auto root = [&](std::size_t a) {
        while (parent[a] != a) a = parent[a] = parent[parent[a]];
        return a;
    };
    std::vector<int> scratch;
    for (std::size_t a = 0; a < axes; ++a) {
        for (std::size_t b = a + 1; b < axes; ++b) {
            if (resource_of_axis[a] < 0 || resource_of_axis[b] < 0) continue;
            scratch.clear();
            std::set_intersection(links[a].begin(), links[a].end(), links[b].begin(), links[b].end(),
                                  std::back_inserter(scratch));
            if (!scratch.empty() || resource_of_axis[a] == resource_of_axis[b]) parent[root(a)] = root(b);
        }
    }
    ContentionClasses classes;
    std::vector<int> class_of_root(axes, -1);
    std::vector<int> axis_class(axes, -1);
    for (std::size_t a = 0; a < axes; ++a) {
        if (resource_of_axis[a] < 0) continue;
        auto& c = class_of_root[root(a)];
        if (c < 0) {
            c = classes.count++;
            classes.alone.push_back(true);
        }
        axis_class[a] = c;
    }
    // A class is alone when all its collectives queue on one resource.
    std::vector<int> class_resource(static_cast<std::size_t>(classes.count), -1);
    for (std::size_t a = 0; a < axes; ++a) {
        if (axis_class[a] < 0) continue;
        const auto c = static_cast<std::size_t>(axis_class[a]);
        if (!one_resource[a]) classes.alone[c] = false;
        if (class_resource[c] < 0) class_resource[c] = resource_of_axis[a];
        if (class_resource[c] != resource_of_axis[a]) classes.alone[c] = false;
    }
    classes.network_of_op.assign(program.ops.size(), -1);
    for (std::size_t i = 0; i < program.ops.size(); ++i) {
        if (plan_of_op[i] != nullptr)
            classes.network_of_op[i] = axis_class[static_cast<std::size_t>(program.ops[i].comm_axis)];
    }
    return classes;
}

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
