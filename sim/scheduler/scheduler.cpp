#include "scheduler/scheduler.hpp"

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <numeric>
#include <optional>

#include "core/assert.hpp"
#include "core/engine.hpp"
#include "network/flow_network.hpp"
#include "scheduler/periods.hpp"

namespace podsim::scheduler {
namespace {

// Regions shorter than this are simulated op by op: a jump needs a few periods to find the steady
// state and a margin at the end.
constexpr std::size_t kMinPeriods = 6;
// Boundaries compared in a region before giving up on it (the state never repeats).
constexpr int kMaxTries = 8;
// Longest period tried, in blocks. A state can repeat every second block only: two kinds of
// collective sharing a flow network swap its transfer slots from one layer to the next.
constexpr std::size_t kMaxPeriodBlocks = 2;

// An op waits only for the predecessors that can still be running when it reaches the head of its
// resource's in-order queue: not for one on its own resource (it comes earlier in the same queue),
// nor for one that an earlier op of its queue also waits for.
Dependencies build_dependencies(const parallel::DeviceProgram& program, bool synchronous) {
    Dependencies deps;
    // Synchronous collectives also wait for the compute before them, and compute waits for the
    // collectives issued since the last compute: extra edges beside each op's own deps.
    const std::size_t n = program.ops.size();
    std::vector<std::pair<int, int>> extra;  // (from, to)
    if (synchronous) {
        int last_compute = -1;
        std::vector<int> since_compute;  // collectives issued since the last compute op
        for (std::size_t i = 0; i < n; ++i) {
            const auto& op = program.ops[i];
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
    // Each op's resource, read once: every dependency asks for its own.
    std::vector<int> resource_of(n);
    for (std::size_t i = 0; i < n; ++i) resource_of[i] = program.ops[i].resource;
    // An edge d -> t is also redundant when t, or an earlier op on t's resource, waits for an op
    // d' >= d on d's resource: each resource runs its ops one at a time in program order, so d'
    // ends no earlier than d, and t starts after that wait. This covers a backward op's
    // dependency on a forward output that the next forward op consumed first, and an optimizer
    // update's dependency on its layer's gradient reduce-scatter when the update before it waited
    // for a later reduce-scatter on the same axis.
    const std::size_t resources = program.resources.size();
    // Per (target resource, dependency resource): the latest dependency waited for so far.
    std::vector<int> covered(resources * resources, -1);
    // Per resource: the latest dependency of the op being read on it.
    std::vector<int> latest(resources, -1);
    std::vector<std::pair<int, int>> kept;  // (from, to): by target in program order, own deps first
    kept.reserve(n + extra.size());
    // The op's dependencies on other resources, (dependency, its resource), own deps first: most of
    // an op's deps are on its own resource, so the second pass reads only these.
    std::vector<std::pair<int, int>> other;
    std::size_t extra_begin = 0;
    for (std::size_t i = 0; i < n; ++i) {
        std::size_t extra_end = extra_begin;  // extra edges come sorted by target
        while (extra_end < extra.size() && static_cast<std::size_t>(extra[extra_end].second) == i)
            ++extra_end;
        const int target = resource_of[i];
        other.clear();
        auto note = [&](int d) {
            PODSIM_ASSERT(d >= 0 && static_cast<std::size_t>(d) < i,
                          "dependency not earlier in program order");
            const int from = resource_of[static_cast<std::size_t>(d)];
            if (from == target) return;
            other.emplace_back(d, from);
            auto& l = latest[static_cast<std::size_t>(from)];
            l = std::max(l, d);
        };
        for (int d : program.ops[i].deps) note(d);
        for (std::size_t e = extra_begin; e < extra_end; ++e) note(extra[e].first);
        for (const auto& [d, from] : other) {
            auto& l = latest[static_cast<std::size_t>(from)];
            if (l != d) continue;  // a later one on the same resource, or already kept
            auto& c = covered[static_cast<std::size_t>(target) * resources + static_cast<std::size_t>(from)];
            if (c < d) kept.emplace_back(d, static_cast<int>(i));
            c = std::max(c, d);
            l = -1;
        }
        extra_begin = extra_end;
    }
    deps.pending.assign(n, 0);
    deps.succ_begin.assign(n + 1, 0);
    deps.pred_begin.assign(n + 1, 0);
    for (const auto& [from, to] : kept) {
        ++deps.succ_begin[static_cast<std::size_t>(from) + 1];
        ++deps.pred_begin[static_cast<std::size_t>(to) + 1];
        ++deps.pending[static_cast<std::size_t>(to)];
    }
    for (std::size_t i = 0; i < n; ++i) {
        deps.succ_begin[i + 1] += deps.succ_begin[i];
        deps.pred_begin[i + 1] += deps.pred_begin[i];
    }
    deps.successors.resize(deps.succ_begin[n]);
    deps.preds.resize(deps.pred_begin[n]);
    std::vector<std::size_t> fill(deps.succ_begin.begin(), deps.succ_begin.end() - 1);
    for (std::size_t e = 0; e < kept.size(); ++e) {
        const auto [from, to] = kept[e];
        deps.successors[fill[static_cast<std::size_t>(from)]++] = to;
        deps.preds[e] = from;  // kept is sorted by target: its order is the CSR's
    }
    return deps;
}

// The scheduler's state at a region boundary, relative to the block (ProgramRun::describe).
struct Snapshot {
    std::vector<std::int64_t> heads;                // per resource: head op relative to the block, busy flag
    std::vector<std::int64_t> events;               // pending events: time from now, handler, relative tag
    std::vector<int> pending;                       // pending counts of the ops that can have changed
    std::int64_t window_begin = 0, window_end = 0;  // of `pending`, relative to the block
    std::vector<network::FlowNetwork::Snapshot> networks;
    bool operator==(const Snapshot&) const = default;
};

// Spare snapshots kept: more than a step of the shipped sweeps takes.
constexpr std::size_t kMaxSpareSnapshots = 64;

}  // namespace

struct ScheduleScratch::Storage {
    std::vector<Snapshot> snapshots;  // spare ones, their vectors' capacity kept
    std::vector<core::Time> durations;
    std::vector<int> pending;
    std::vector<std::vector<int>> queues;
    std::vector<std::size_t> heads;
    std::vector<int> region_of_boundary, watch_of_boundary, started, ended;
    std::vector<core::Engine::Pending> pending_events;
    std::vector<const void*> transfer_of;  // the constructor's, for OpBehaviour
    std::vector<int> network_of;
};

ScheduleScratch::ScheduleScratch() : storage(std::make_unique<Storage>()) {}
ScheduleScratch::~ScheduleScratch() = default;

namespace {

class ProgramRun final : public core::EventHandler, public network::TransferListener {
  public:
    ProgramRun(const parallel::DeviceProgram& program, const std::vector<cost::OpCost>& costs,
               bool synchronous, const NetworkInput* network, const ScheduleOptions& options)
        : program_(program),
          network_input_(network),
          count_link_bytes_(network && options.count_link_bytes),
          reuse_rates_(options.reuse_rates),
          deps_(options.dependencies ? *options.dependencies
                                     : own_deps_.emplace(build_dependencies(program, synchronous))),
          storage_(options.scratch ? options.scratch->storage.get() : nullptr) {
        if (storage_) {
            exchange_storage();
            take_spare(scratch_);
            // Empty as in a new run: whether they are empty says whether there are regions and watches.
            region_of_boundary_.clear();
            watch_of_boundary_.clear();
            started_.clear();
            ended_.clear();
        }
        pending_.assign(deps_.pending.begin(), deps_.pending.end());
        if (network) {
            int count = 1;
            for (int c : network->network_of_op) count = std::max(count, c + 1);
            networks_.resize(static_cast<std::size_t>(count));  // made when first used
        }
        if (count_link_bytes_) alone_link_bytes_.assign(network->link_bandwidth->size(), 0.0);
        const std::size_t n = program.ops.size();
        durations_.resize(n);
        for (std::size_t i = 0; i < n; ++i) durations_[i] = core::from_seconds(costs[i].seconds);
        for (auto& queue : queues_) queue.clear();
        queues_.resize(program.resources.size());
        for (std::size_t i = 0; i < n; ++i) {
            queues_[static_cast<std::size_t>(program.ops[i].resource)].push_back(static_cast<int>(i));
        }
        heads_.assign(queues_.size(), 0);
        busy_.assign(queues_.size(), false);
        timeline_.spans.resize(n);
        if (options.jump_periods || !options.watch.empty()) {
            std::vector<const void*> transfer_of;
            std::vector<int> network_of;
            if (storage_) {
                transfer_of.swap(storage_->transfer_of);
                network_of.swap(storage_->network_of);
            }
            collect_behaviour(transfer_of, network_of);
            const OpBehaviour behaviour{durations_, transfer_of, network_of, deps_.pred_begin, deps_.preds};
            if (options.jump_periods) find_regions(behaviour);
            if (!options.watch.empty()) find_watches(options.watch, behaviour);
            if (storage_) {
                transfer_of.swap(storage_->transfer_of);
                network_of.swap(storage_->network_of);
            }
        }
    }

    ProgramRun(const ProgramRun&) = delete;
    ProgramRun& operator=(const ProgramRun&) = delete;
    ~ProgramRun() override {
        if (!storage_) return;
        exchange_storage();
        auto spare = [&](Snapshot& snapshot) {
            if (storage_->snapshots.size() < kMaxSpareSnapshots)
                storage_->snapshots.push_back(std::move(snapshot));
        };
        spare(scratch_);
        for (auto& state : states_)
            for (auto& slot : state.recent) spare(slot.state);
        for (auto& watch : watches_) spare(watch.first);
    }

    Timeline run() {
        for (std::size_t r = 0; r < queues_.size(); ++r) try_start(static_cast<int>(r));
        take_due_snapshot();
        // Most events start no boundary op: the test is inline, the snapshot is not.
        while (engine_.step())
            if (due_boundary_ >= 0 || !due_watches_.empty()) take_due_snapshot();
        timeline_.step_time = engine_.now();
        timeline_.events = engine_.events_processed() + replayed_events_ + jumped_events_;
        if (count_link_bytes_) {
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
        if (logging_) ended_.push_back(static_cast<int>(op));
        busy_[resource] = false;
        ++heads_[resource];
        for (std::size_t e = deps_.succ_begin[op]; e < deps_.succ_begin[op + 1]; ++e) {
            const auto s = static_cast<std::size_t>(deps_.successors[e]);
            if (--pending_[s] == 0) try_start(program_.ops[s].resource);
        }
        try_start(static_cast<int>(resource));
    }

    void try_start(int resource) {
        const auto r = static_cast<std::size_t>(resource);
        if (busy_[r] || heads_[r] >= queues_[r].size()) return;
        const auto op = static_cast<std::size_t>(queues_[r][heads_[r]]);
        if (pending_[op] != 0) return;
        busy_[r] = true;
        timeline_.spans[op] = Span{static_cast<int>(op), resource, engine_.now(), engine_.now()};
        if (logging_) started_.push_back(static_cast<int>(op));
        if (!region_of_boundary_.empty() && region_of_boundary_[op] >= 0)
            due_boundary_ = static_cast<int>(op);
        if (!watch_of_boundary_.empty() && watch_of_boundary_[op] >= 0) due_watches_.push_back(op);
        const TransferAlone* alone = network_input_ && !network_input_->alone_of_op.empty()
                                         ? network_input_->alone_of_op[op]
                                         : nullptr;
        if (alone != nullptr) {
            if (count_link_bytes_)
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
                networks_[net] = std::make_unique<network::FlowNetwork>(
                    engine_, *network_input_->link_bandwidth, *network_input_->scratch, count_link_bytes_,
                    reuse_rates_);
            }
            networks_[net]->start(network_input_->plan_of_op[op]->phases, *this, op);
        } else {
            engine_.schedule_after(durations_[op], *this, op);
        }
    }

    // ---- Periodic steady state (docs/model.md, "Simulating fast, with the same results") ----

    // The state at one boundary of a region, with what a jump from it needs.
    struct Boundary {
        std::size_t block = 0;
        bool valid = false;
        Snapshot state;
        std::size_t matched_blocks = 0;  // it repeated the boundary that many blocks before it, or 0
        core::Time time = 0;
        std::uint64_t events = 0;  // events run by then
        std::size_t started_mark = 0, ended_mark = 0;
        std::vector<std::vector<double>> link_bytes;  // per network, when matched
        std::vector<double> alone_link_bytes;
    };
    struct RegionState {
        PeriodicRegion region;
        std::array<Boundary, kMaxPeriodBlocks> recent;  // boundary k at k % kMaxPeriodBlocks
        bool done = false;
        int tries = 0;
    };

    // What a collective op replays and on which network, by op, for comparing ops (OpBehaviour).
    void collect_behaviour(std::vector<const void*>& transfer, std::vector<int>& network) const {
        transfer.assign(program_.ops.size(), nullptr);
        network.assign(program_.ops.size(), -1);
        if (!network_input_) return;
        for (std::size_t i = 0; i < program_.ops.size(); ++i) {
            transfer[i] = network_input_->plan_of_op[i];
            if (!network_input_->alone_of_op.empty() && network_input_->alone_of_op[i])
                transfer[i] = network_input_->alone_of_op[i];
            if (!network_input_->network_of_op.empty()) network[i] = network_input_->network_of_op[i];
        }
    }

    void find_regions(const OpBehaviour& behaviour) {
        auto regions = periodic_regions(program_, behaviour, kMinPeriods);
        if (regions.empty()) return;
        // A boundary is the start of a region's block; the first block's ops depend on what came
        // before the region, so boundaries count from the second block.
        region_of_boundary_.assign(program_.ops.size(), -1);
        for (std::size_t g = 0; g < regions.size(); ++g) {
            for (std::size_t k = 1; k < regions[g].count; ++k)
                region_of_boundary_[regions[g].first_op + k * regions[g].length] = static_cast<int>(g);
            states_.emplace_back();
            states_.back().region = regions[g];
            for (auto& slot : states_.back().recent) take_spare(slot.state);
            timeline_.regions.push_back(regions[g]);
        }
        logging_ = true;
    }

    void find_watches(const std::vector<PeriodicRegion>& candidates, const OpBehaviour& behaviour) {
        watch_of_boundary_.assign(program_.ops.size(), -1);
        std::vector<PeriodicRegion> regions = candidates;
        const std::vector<bool> identical = identical_two_blocks(program_, behaviour, regions);
        for (std::size_t c = 0; c < candidates.size(); ++c) {
            timeline_.watched.push_back(WatchedPeriod{candidates[c].first_op, candidates[c].length});
            const PeriodicRegion& region = regions[c];
            if (!identical[c]) continue;
            const std::size_t second = region.first_op + region.length;
            if (watch_of_boundary_[region.first_op] >= 0 || watch_of_boundary_[second] >= 0) continue;
            watch_of_boundary_[region.first_op] = watch_of_boundary_[second] =
                static_cast<int>(watches_.size());
            WatchState state;
            take_spare(state.first);
            state.region = region;
            state.record = timeline_.watched.size() - 1;
            watches_.push_back(std::move(state));
        }
    }

    // Compares the state at each watched boundary an op started at with the first block's.
    // Once one has repeated, the rest are not compared: the first to repeat in time is the first in
    // program order (compute runs in program order), which is the one a fold takes.
    void at_watched_boundaries() {
        for (std::size_t op : due_watches_) {
            if (watch_repeated_) break;
            WatchState& w = watches_[static_cast<std::size_t>(watch_of_boundary_[op])];
            const std::size_t k = op == w.region.first_op ? 0 : 1;
            if (k == 1 && !w.first_valid) continue;
            Snapshot& state = scratch_;
            std::size_t horizon = 0;
            const bool described = describe(w.region, k, state, horizon);
            const std::uint64_t events = engine_.events_processed() + replayed_events_ + jumped_events_;
            if (k == 0) {
                w.first_valid = described;
                std::swap(w.first, state);  // the old one's storage serves the next snapshot
                w.time = engine_.now();
                w.events = events;
            } else if (described && w.first_valid && state == w.first) {
                WatchedPeriod& out = timeline_.watched[w.record];
                out.repeated = true;
                out.start = w.time;
                out.period = engine_.now() - w.time;
                out.events = events - w.events;
                watch_repeated_ = true;
            }
        }
        due_watches_.clear();
    }

    void take_due_snapshot() {
        // Watched boundaries first: the state when their op started, before any jump from there.
        if (!due_watches_.empty()) at_watched_boundaries();
        if (due_boundary_ < 0) return;
        const auto op = static_cast<std::size_t>(due_boundary_);
        due_boundary_ = -1;
        RegionState& state = states_[static_cast<std::size_t>(region_of_boundary_[op])];
        if (state.done) return;
        at_boundary(state, (op - state.region.first_op) / state.region.length);
    }

    static bool inside(const PeriodicRegion& region, std::size_t op) {
        return op >= region.first_op && op < region.end();
    }

    // The state at the start of block k of the region, relative to that block; false when it cannot
    // be compared (an op outside the region is in flight or at a head).
    // `horizon`: the ops from there on have not been touched yet, whatever the state.
    bool describe(const PeriodicRegion& region, std::size_t k, Snapshot& out, std::size_t& horizon) {
        const std::size_t base = region.first_op + k * region.length;
        const core::Time now = engine_.now();
        std::size_t window_end = 0;
        out.heads.clear();
        std::size_t lowest = region.end(), last_started = base, highest_head = base;
        for (std::size_t r = 0; r < queues_.size(); ++r) {
            if (heads_[r] >= queues_[r].size()) {
                out.heads.push_back(-1);
                continue;
            }
            const auto head = static_cast<std::size_t>(queues_[r][heads_[r]]);
            if (!inside(region, head)) {
                // A resource waiting beyond the region must keep waiting until the region is over.
                if (busy_[r] || head < region.first_op) return false;
                bool blocked = false;
                for (std::size_t p = deps_.pred_begin[head]; p < deps_.pred_begin[head + 1]; ++p)
                    blocked = blocked || static_cast<std::size_t>(deps_.preds[p]) >= region.end();
                if (!blocked) return false;
                out.heads.push_back(static_cast<std::int64_t>(head) * 2 + 1);  // absolute
                continue;
            }
            lowest = std::min(lowest, head);
            highest_head = std::max(highest_head, head);
            out.heads.push_back((static_cast<std::int64_t>(head) - static_cast<std::int64_t>(base)) * 4 +
                                (busy_[r] ? 2 : 0));
            const std::size_t started =
                busy_[r] ? head
                         : (heads_[r] > 0 ? static_cast<std::size_t>(queues_[r][heads_[r] - 1]) : head);
            if (inside(region, started)) last_started = std::max(last_started, started);
        }
        out.events.clear();
        engine_.pending(pending_events_);
        for (const auto& e : pending_events_) {
            out.events.push_back(e.when - now);
            if (e.handler == this) {
                const auto op = static_cast<std::size_t>(e.tag);
                if (!inside(region, op)) return false;
                out.events.push_back(-1);
                out.events.push_back(static_cast<std::int64_t>(op) - static_cast<std::int64_t>(base));
                continue;
            }
            std::size_t net = 0;
            while (net < networks_.size() && networks_[net].get() != e.handler) ++net;
            PODSIM_ASSERT(net < networks_.size(), "an event of an unknown handler");
            out.events.push_back(static_cast<std::int64_t>(net));
            networks_[net]->describe_tag(e.tag, base, out.events);
        }
        out.networks.resize(networks_.size());
        for (std::size_t net = 0; net < networks_.size(); ++net) {
            if (!networks_[net]) {
                out.networks[net].transfers.clear();
                out.networks[net].active.clear();
                out.networks[net].since_update = 0;
                continue;
            }
            // An idle network's snapshot is empty, as that of one not made yet: nothing it keeps
            // changes a time (its stale completion checks, if any, are among the pending events).
            networks_[net]->snapshot(now, base, out.networks[net]);
            for (const auto& t : out.networks[net].transfers)
                if (!inside(region, static_cast<std::size_t>(static_cast<std::int64_t>(base) + t.tag)))
                    return false;
        }
        // Only ops at or after a head are still to start, and only those within the dependency span
        // of a started op can have a pending count below their number of predecessors.
        window_end = std::min(region.end(), last_started + region.dependency_span + 1);
        if (lowest > window_end) lowest = window_end;
        horizon = std::max(window_end, highest_head + 1);
        out.window_begin = static_cast<std::int64_t>(lowest) - static_cast<std::int64_t>(base);
        out.window_end = static_cast<std::int64_t>(window_end) - static_cast<std::int64_t>(base);
        out.pending.assign(pending_.begin() + static_cast<std::ptrdiff_t>(lowest),
                           pending_.begin() + static_cast<std::ptrdiff_t>(window_end));
        return true;
    }

    void at_boundary(RegionState& state, std::size_t k) {
        const PeriodicRegion& region = state.region;
        Boundary& slot = state.recent[k % kMaxPeriodBlocks];
        Snapshot& now_state = scratch_;
        std::size_t horizon = 0;
        if (!describe(region, k, now_state, horizon)) {
            slot.block = k;
            slot.valid = false;
            if (++state.tries >= kMaxTries) state.done = true;
            return;
        }
        // The shortest period p (in blocks) whose boundary k - p holds the same state.
        std::size_t matched = 0;
        for (std::size_t p = 1; p <= kMaxPeriodBlocks && p <= k && matched == 0; ++p) {
            const Boundary& before = state.recent[(k - p) % kMaxPeriodBlocks];
            if (before.valid && before.block == k - p && before.state == now_state) matched = p;
        }
        if (matched != 0) {
            const Boundary& before = state.recent[(k - matched) % kMaxPeriodBlocks];
            if (before.matched_blocks == matched) {
                // Three boundaries a period apart hold the same state: jump as many periods as stay
                // inside the region.
                const std::size_t length = matched * region.length;
                const std::size_t periods = (region.end() - horizon) / length;
                if (periods >= 1) jump(before, length, periods, region.first_op + k * region.length);
                state.done = true;
                return;
            }
        } else if (++state.tries >= kMaxTries) {
            state.done = true;
            return;
        }
        slot.block = k;
        slot.valid = true;
        std::swap(slot.state, now_state);  // the old one's storage serves the next snapshot
        slot.matched_blocks = matched;
        slot.time = engine_.now();
        slot.events = engine_.events_processed() + replayed_events_;
        slot.started_mark = started_.size();
        slot.ended_mark = ended_.size();
        if (matched != 0 && count_link_bytes_) {  // a period later: one period's link bytes
            slot.link_bytes.assign(networks_.size(), {});
            for (std::size_t net = 0; net < networks_.size(); ++net)
                if (networks_[net]) slot.link_bytes[net] = networks_[net]->link_bytes();
            slot.alone_link_bytes = alone_link_bytes_;
        }
    }

    // Repeats the period of `length` ops since boundary `from` `periods` times: spans, pending
    // counts, queue heads, events, transfers in flight and link bytes, all shifted by whole periods.
    // `boundary_op` starts the block whose start is now.
    void jump(const Boundary& from, std::size_t length, std::size_t periods, std::size_t boundary_op) {
        const core::Time period = engine_.now() - from.time;
        if (period <= 0) return;
        // Every instant the jump writes is at most `periods` periods from now (the engine checks the
        // events it moves): beyond int64 picoseconds the step cannot be represented.
        core::Time span = 0;
        if (__builtin_mul_overflow(static_cast<core::Time>(periods), period, &span) ||
            span > core::kMaxTime - engine_.now())
            throw core::TimeOverflow(
                "the simulated time passes the limit of int64 picoseconds (about 106 days)");
        const auto shift_time = [&](core::Time t, std::size_t j) {
            return t + static_cast<core::Time>(j) * period;
        };
        for (std::size_t j = 1; j <= periods; ++j) {
            const std::size_t shift = j * length;
            for (std::size_t e = from.started_mark; e < started_.size(); ++e) {
                const auto op = static_cast<std::size_t>(started_[e]);
                timeline_.spans[op + shift] = Span{static_cast<int>(op + shift), timeline_.spans[op].resource,
                                                   shift_time(timeline_.spans[op].start, j), 0};
            }
            for (std::size_t e = from.ended_mark; e < ended_.size(); ++e) {
                const auto op = static_cast<std::size_t>(ended_[e]);
                timeline_.spans[op + shift].end = shift_time(timeline_.spans[op].end, j);
                for (std::size_t s = deps_.succ_begin[op + shift]; s < deps_.succ_begin[op + shift + 1]; ++s)
                    --pending_[static_cast<std::size_t>(deps_.successors[s])];
                ++heads_[static_cast<std::size_t>(program_.ops[op].resource)];
            }
        }
        const std::uint64_t tag_shift = periods * length;
        const core::Time time_shift = static_cast<core::Time>(periods) * period;
        engine_.jump(time_shift, [&](const core::EventHandler& handler, std::uint64_t tag) {
            return &handler == this ? tag + tag_shift : tag;
        });
        const auto repeats = static_cast<double>(periods);
        for (std::size_t net = 0; net < networks_.size(); ++net) {
            if (!networks_[net]) continue;
            std::vector<double> per_period;
            if (count_link_bytes_) {
                per_period = networks_[net]->link_bytes();
                const auto& before = from.link_bytes[net];
                for (std::size_t l = 0; l < per_period.size(); ++l)
                    per_period[l] -= l < before.size() ? before[l] : 0.0;
            }
            networks_[net]->jump(time_shift, tag_shift, per_period, repeats);
        }
        if (count_link_bytes_) {
            for (std::size_t l = 0; l < alone_link_bytes_.size(); ++l)
                alone_link_bytes_[l] += repeats * (alone_link_bytes_[l] - from.alone_link_bytes[l]);
        }
        const std::uint64_t events_per_period = engine_.events_processed() + replayed_events_ - from.events;
        jumped_events_ += periods * events_per_period;
        timeline_.jumps.push_back(
            PeriodJump{boundary_op, length, periods, from.time, period, events_per_period});
    }

    // ---- Storage from and back to a ScheduleScratch ----

    // The working arrays and the scratch's swap places: the constructor takes the storage the last
    // run left, the destructor leaves this run's.
    void exchange_storage() {
        durations_.swap(storage_->durations);
        pending_.swap(storage_->pending);
        queues_.swap(storage_->queues);
        heads_.swap(storage_->heads);
        region_of_boundary_.swap(storage_->region_of_boundary);
        watch_of_boundary_.swap(storage_->watch_of_boundary);
        started_.swap(storage_->started);
        ended_.swap(storage_->ended);
        pending_events_.swap(storage_->pending_events);
    }

    // A spare snapshot's storage into `snapshot` (its contents are written before they are read).
    void take_spare(Snapshot& snapshot) {
        if (!storage_ || storage_->snapshots.empty()) return;
        snapshot = std::move(storage_->snapshots.back());
        storage_->snapshots.pop_back();
    }

    const parallel::DeviceProgram& program_;
    const NetworkInput* network_input_;
    bool count_link_bytes_;
    bool reuse_rates_;
    core::Engine engine_;
    std::vector<std::unique_ptr<network::FlowNetwork>> networks_;  // one per contention class
    std::vector<double> alone_link_bytes_;  // bytes of the transfers taken from their run alone
    std::uint64_t replayed_events_ = 0;
    std::uint64_t jumped_events_ = 0;
    std::vector<core::Time> durations_;
    std::optional<Dependencies> own_deps_;  // when the options bring none
    const Dependencies& deps_;
    ScheduleScratch::Storage* storage_;  // to borrow storage from and give it back to, or null
    std::vector<int> pending_;           // per op: its kept dependencies not finished yet
    std::vector<std::vector<int>> queues_;
    std::vector<std::size_t> heads_;
    std::vector<bool> busy_;
    Timeline timeline_;
    // Periodic steady state.
    std::vector<int> region_of_boundary_;  // per op: the region whose block it starts, or -1
    std::vector<RegionState> states_;
    int due_boundary_ = -1;  // a boundary op started by the event being handled
    // Watched two-block regions (ScheduleOptions::watch).
    struct WatchState {
        PeriodicRegion region;
        std::size_t record = 0;  // index into timeline_.watched
        bool first_valid = false;
        Snapshot first;
        core::Time time = 0;
        std::uint64_t events = 0;
    };
    std::vector<int> watch_of_boundary_;  // per op: the watch whose block it starts, or -1
    std::vector<WatchState> watches_;
    std::vector<std::size_t> due_watches_;  // watched boundary ops started by the event being handled
    bool watch_repeated_ = false;
    bool logging_ = false;
    std::vector<int> started_, ended_;                   // ops in the order they started / ended
    Snapshot scratch_;                                   // the snapshot being taken
    std::vector<core::Engine::Pending> pending_events_;  // describe()'s scratch
};

}  // namespace

ContentionClasses contention_classes(const parallel::DeviceProgram& program,
                                     const std::vector<const collectives::CommPlan*>& plan_of_op) {
    // Links of each comm axis, over all its plans: a bitset per axis, one row of `words` each.
    const std::size_t axes = program.comm_axes.size();
    int max_link = -1;
    for (const collectives::CommPlan* plan : plan_of_op)
        if (plan != nullptr && !plan->links.empty()) max_link = std::max(max_link, plan->links.back());
    const std::size_t words = static_cast<std::size_t>(max_link + 64) / 64;
    std::vector<std::uint64_t> links(axes * words, 0);
    std::vector<const collectives::CommPlan*> last_plan(axes, nullptr);
    std::vector<int> resource_of_axis(axes, -1);
    std::vector<bool> one_resource(axes, true);
    for (std::size_t i = 0; i < program.ops.size(); ++i) {
        const collectives::CommPlan* plan = plan_of_op[i];
        if (plan == nullptr) continue;
        const auto a = static_cast<std::size_t>(program.ops[i].comm_axis);
        const int resource = program.ops[i].resource;
        if (resource_of_axis[a] < 0) resource_of_axis[a] = resource;
        one_resource[a] = one_resource[a] && resource_of_axis[a] == resource;
        if (last_plan[a] == plan) continue;  // set already (setting them again changes nothing)
        last_plan[a] = plan;
        for (int link : plan->links)
            links[a * words + static_cast<std::size_t>(link) / 64] |= std::uint64_t{1} << (link % 64);
    }
    auto share_a_link = [&](std::size_t a, std::size_t b) {
        // Plans name the links of one line through the origin; the chips of different pipeline
        // stages are different lines.
        if (program.comm_axes[a].stage != program.comm_axes[b].stage) return false;
        for (std::size_t w = 0; w < words; ++w)
            if (links[a * words + w] & links[b * words + w]) return true;
        return false;
    };
    // Union of axes that share a link or a resource.
    std::vector<std::size_t> parent(axes);
    std::iota(parent.begin(), parent.end(), std::size_t{0});
    auto root = [&](std::size_t a) {
        while (parent[a] != a) a = parent[a] = parent[parent[a]];
        return a;
    };
    for (std::size_t a = 0; a < axes; ++a) {
        for (std::size_t b = a + 1; b < axes; ++b) {
            if (resource_of_axis[a] < 0 || resource_of_axis[b] < 0) continue;
            if (share_a_link(a, b) || resource_of_axis[a] == resource_of_axis[b]) parent[root(a)] = root(b);
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

Dependencies dependencies(const parallel::DeviceProgram& program, const parallel::RuntimeSpec& runtime) {
    return build_dependencies(program, !runtime.async());
}

Timeline schedule(const parallel::DeviceProgram& program, const std::vector<cost::OpCost>& costs,
                  const parallel::RuntimeSpec& runtime, const NetworkInput* network,
                  ScheduleOptions options) {
    PODSIM_ASSERT(costs.size() == program.ops.size(), "one cost per op");
    PODSIM_ASSERT(!network || network->plan_of_op.size() == program.ops.size(), "one plan slot per op");
    PODSIM_ASSERT(!network || (network->link_bandwidth && network->scratch &&
                               network->scratch->capacity.size() >= network->link_bandwidth->size()),
                  "a network without link bandwidths or a large enough solver scratch");
    for (std::size_t i = 0; i < program.ops.size(); ++i) {
        const auto& resource = program.resources[static_cast<std::size_t>(program.ops[i].resource)];
        PODSIM_ASSERT(resource.kind != parallel::ResourceKind::ici || costs[i].seconds > 0.0 ||
                          (network && network->plan_of_op[i] != nullptr),
                      "an ICI collective with neither a plan nor a cost");
    }
    PODSIM_ASSERT(!options.dependencies || options.dependencies->pending.size() == program.ops.size(),
                  "dependencies of another program");
    ProgramRun run(program, costs, !runtime.async(), network, options);
    return run.run();
}

}  // namespace podsim::scheduler
