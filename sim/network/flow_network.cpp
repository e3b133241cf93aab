#include "network/flow_network.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "core/assert.hpp"

namespace podsim::network {
namespace {

// Event tags: the top bit marks "phase latency elapsed" (low bits: transfer slot); otherwise the
// tag is the generation of a flow-completion check.
constexpr std::uint64_t kLatencyBit = std::uint64_t{1} << 63;
// Bytes below which a flow counts as arrived (rounding of integer picosecond times).
constexpr double kBytesEpsilon = 1e-3;

}  // namespace

FlowNetwork::Scratch::Scratch(std::size_t links)
    : capacity(links), unfixed_on_link(links, 0), first_flow(links), next_flow(links) {}

// A step meets a few hundred sets of flows at most (150 on the slow 16x16x16 config); past this many,
// new sets are solved each time (a sweep's cache then starts the memo again), which bounds the memo
// to a few megabytes.
constexpr std::size_t kMaxMemoEntries = 4096;

// Trajectories hold a few points of a few dozen flows each (the whole 175B sweep records fewer than
// 256 phases, 40,000 flow states); this bounds them to about 2.6 MB, as the rates.
constexpr std::size_t kMaxTrajectoryValues = std::size_t{1} << 17;

namespace {

// Open addressing over `slots` (an entry's index + 1; 0 when empty), as the rate memo and the
// trajectories use it.
void place(std::vector<std::uint32_t>& slots, std::uint64_t hash, std::size_t index) {
    const std::size_t mask = slots.size() - 1;
    std::size_t s = hash & mask;
    while (slots[s] != 0) s = (s + 1) & mask;
    slots[s] = static_cast<std::uint32_t>(index + 1);
}

// Room for one entry more than `entries`: the table is kept at most half full, and when it grows
// every entry i is placed again by hash_of(i).
template <class HashOf>
void make_room(std::vector<std::uint32_t>& slots, std::size_t entries, HashOf hash_of) {
    if (2 * (entries + 1) <= slots.size()) return;
    slots.assign(std::max<std::size_t>(64, 2 * slots.size()), 0u);
    for (std::size_t i = 0; i < entries; ++i) place(slots, hash_of(i), i);
}

}  // namespace

void FlowNetwork::Scratch::RateMemo::clear() {
    entries.clear();
    std::fill(slots.begin(), slots.end(), 0u);
    trajectories.clear();
    std::fill(trajectory_slots.begin(), trajectory_slots.end(), 0u);
    trajectory_values = 0;
}

bool FlowNetwork::Scratch::RateMemo::full() const {
    return entries.size() >= kMaxMemoEntries || trajectory_values >= kMaxTrajectoryValues;
}

std::size_t FlowNetwork::Scratch::RateMemo::Trajectory::flows_at(std::size_t point) const {
    return (point + 1 < first.size() ? first[point + 1] : flow.size()) - first[point];
}

namespace {

std::uint64_t trajectory_hash(int parent, std::size_t parent_point, core::Time offset,
                              const FlowPhase* phase) {
    std::uint64_t h = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(phase));
    for (std::uint64_t v : {static_cast<std::uint64_t>(parent), static_cast<std::uint64_t>(parent_point),
                            static_cast<std::uint64_t>(offset)})
        h = (h ^ (h >> 29) ^ v) * 0x9e3779b97f4a7c15ull;
    return h ^ (h >> 32);
}

}  // namespace

int FlowNetwork::Scratch::RateMemo::trajectory(int parent, std::size_t parent_point, core::Time offset,
                                               const FlowPhase* phase, const std::vector<double>* bandwidth) {
    const std::uint64_t hash = trajectory_hash(parent, parent_point, offset, phase);
    if (!trajectory_slots.empty()) {
        const std::size_t mask = trajectory_slots.size() - 1;
        for (std::size_t s = hash & mask; trajectory_slots[s] != 0; s = (s + 1) & mask) {
            const auto& t = trajectories[trajectory_slots[s] - 1];
            if (t.phase == phase && t.parent == parent && t.parent_point == parent_point &&
                t.offset == offset && t.bandwidth == bandwidth)
                return static_cast<int>(trajectory_slots[s] - 1);
        }
    }
    if (trajectories.size() >= kMaxMemoEntries || trajectory_values >= kMaxTrajectoryValues) return -1;
    const std::size_t transfers =
        parent < 0 ? 1 : trajectories[static_cast<std::size_t>(parent)].transfers + 1;
    if (transfers > 255) return -1;  // ordinals are bytes
    make_room(trajectory_slots, trajectories.size(), [&](std::size_t i) {
        const auto& t = trajectories[i];
        return trajectory_hash(t.parent, t.parent_point, t.offset, t.phase);
    });
    place(trajectory_slots, hash, trajectories.size());
    Trajectory& t = trajectories.emplace_back();
    t.parent = parent;
    t.parent_point = parent_point;
    t.offset = offset;
    t.phase = phase;
    t.bandwidth = bandwidth;
    t.transfers = transfers;
    return static_cast<int>(trajectories.size() - 1);
}

namespace {

// A flow in a rate memo key: its path id (odd) or its address (even: flows are aligned).
std::uint64_t flow_key(const Flow& flow) {
    if (flow.path_id != 0) return (static_cast<std::uint64_t>(flow.path_id) << 1) | 1u;
    return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(&flow));
}

// FNV-1a over the keys in four interleaved lanes (one chain of multiplies was half of a memo
// lookup), combined at the end. Only a hash: the memo compares whole keys.
std::uint64_t flows_hash(const std::vector<std::uint64_t>& flows, const std::vector<double>* bandwidth) {
    constexpr std::uint64_t kPrime = 1099511628211ull;
    std::uint64_t lane[4] = {14695981039346656037ull, 0x9e3779b97f4a7c15ull, 0xc2b2ae3d27d4eb4full,
                             0x165667b19e3779f9ull};
    const std::size_t n = flows.size();
    std::size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        for (std::size_t k = 0; k < 4; ++k) lane[k] = (lane[k] ^ flows[i + k]) * kPrime;
    }
    for (; i < n; ++i) lane[0] = (lane[0] ^ flows[i]) * kPrime;
    std::uint64_t h = static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(bandwidth)) ^ n;
    for (std::uint64_t v : lane) h = (h ^ v) * kPrime;
    return h ^ (h >> 29);
}

const std::vector<double>* memo_find(const FlowNetwork::Scratch::RateMemo& memo, std::uint64_t hash,
                                     const std::vector<double>* bandwidth,
                                     const std::vector<std::uint64_t>& flows) {
    if (memo.slots.empty()) return nullptr;
    const std::size_t mask = memo.slots.size() - 1;
    for (std::size_t s = hash & mask; memo.slots[s] != 0; s = (s + 1) & mask) {
        const auto& e = memo.entries[memo.slots[s] - 1];
        if (e.hash == hash && e.bandwidth == bandwidth && e.flows == flows) return &e.rates;
    }
    return nullptr;
}

void memo_insert(FlowNetwork::Scratch::RateMemo& memo, std::uint64_t hash,
                 const std::vector<double>* bandwidth, const std::vector<std::uint64_t>& flows,
                 std::vector<double> rates) {
    if (memo.entries.size() >= kMaxMemoEntries) return;
    make_room(memo.slots, memo.entries.size(), [&](std::size_t i) { return memo.entries[i].hash; });
    place(memo.slots, hash, memo.entries.size());
    memo.entries.push_back({hash, bandwidth, flows, std::move(rates)});
}

}  // namespace

FlowNetwork::FlowNetwork(core::Engine& engine, std::vector<double> link_bandwidth)
    : engine_(engine),
      owned_bandwidth_(std::move(link_bandwidth)),
      bandwidth_(&owned_bandwidth_),
      owned_scratch_(std::make_unique<Scratch>(owned_bandwidth_.size())),
      scratch_(owned_scratch_.get()),
      link_bytes_(owned_bandwidth_.size(), 0.0) {}

FlowNetwork::FlowNetwork(core::Engine& engine, const std::vector<double>& link_bandwidth, Scratch& scratch,
                         bool count_link_bytes, bool reuse_rates)
    : engine_(engine),
      bandwidth_(&link_bandwidth),
      scratch_(&scratch),
      count_link_bytes_(count_link_bytes),
      reuse_rates_(reuse_rates) {
    // Rates solved for networks before this one may name flows of plans that are gone.
    if (!scratch_->keep_rates) scratch_->rates.clear();
}

void FlowNetwork::start(const std::vector<FlowPhase>& phases, TransferListener& listener, std::uint64_t tag) {
    int slot;
    if (!free_transfers_.empty()) {
        slot = free_transfers_.back();
        free_transfers_.pop_back();
    } else {
        slot = static_cast<int>(transfers_.size());
        transfers_.emplace_back();
    }
    transfers_[static_cast<std::size_t>(slot)] = Transfer{&phases, &listener, tag, 0, 0, true};
    begin_phase(slot);
}

void FlowNetwork::begin_phase(int slot) {
    Transfer& t = transfers_[static_cast<std::size_t>(slot)];
    if (t.phase >= t.phases->size()) {
        t.in_use = false;
        free_transfers_.push_back(slot);
        t.listener->on_transfer_done(engine_.now(), t.tag);
        return;
    }
    const FlowPhase& phase = (*t.phases)[t.phase];
    engine_.schedule_after(core::from_seconds(phase.latency), *this,
                           kLatencyBit | static_cast<std::uint64_t>(slot));
}

std::size_t FlowNetwork::active_flows() const {
    if (trajectory_ >= 0 && !materialized_)
        return scratch_->rates.trajectories[static_cast<std::size_t>(trajectory_)].flows_at(point_);
    return flows_.size();
}

void FlowNetwork::inject_flows(int slot) {
    Transfer& t = transfers_[static_cast<std::size_t>(slot)];
    const FlowPhase& phase = (*t.phases)[t.phase];
    const core::Time now = engine_.now();
    // Only with a scratch whose owner clears it between networks, never while one runs.
    if (trajectory_ >= 0 || (flows_.empty() && reuse_rates_ && !count_link_bytes_ && scratch_->keep_rates)) {
        // From an idle network, or from a recorded state: follow the trajectory that starts here.
        auto& memo = scratch_->rates;
        const bool root = trajectory_ < 0;
        const int next = root ? memo.trajectory(-1, 0, 0, &phase, bandwidth_)
                              : memo.trajectory(trajectory_, point_, now - last_update_, &phase, bandwidth_);
        if (root || next < 0) ordinal_slots_.clear();
        if (next >= 0) ordinal_slots_.push_back(slot);
        if (next >= 0 && memo.trajectories[static_cast<std::size_t>(next)].points() > 0) {
            trajectory_ = next;
            point_ = 0;
            trajectory_start_ = now;
            last_update_ = now;
            materialized_ = false;
            flow_transfers_.clear();
            flows_.clear();
            remaining_.clear();
            rates_.clear();
            flow_keys_.clear();
            const auto& trajectory = memo.trajectories[static_cast<std::size_t>(next)];
            set_flows_left(trajectory);
            ++generation_;
            engine_.schedule_after(trajectory.next[0], *this, generation_);
            return;
        }
        if (!root && !materialized_) materialize();
        trajectory_ = next;  // recorded as it runs, when there is room
        point_ = 0;
        trajectory_start_ = now;
        materialized_ = true;
    }
    advance_to(engine_.now());
    if (count_link_bytes_ && link_bytes_.empty()) link_bytes_.assign(bandwidth_->size(), 0.0);
    // Room for every flow of the phase at once, then the ones that carry bytes (five push_backs
    // per flow were most of a phase's start).
    const std::size_t first = flows_.size();
    const std::size_t most = first + phase.flows.size();
    flow_transfers_.resize(most);
    flows_.resize(most);
    remaining_.resize(most);
    rates_.resize(most);
    flow_keys_.resize(most);
    std::size_t end = first;
    for (const Flow& flow : phase.flows) {
        if (flow.bytes <= kBytesEpsilon || flow.links.empty()) continue;
        flow_transfers_[end] = slot;
        flows_[end] = &flow;
        remaining_[end] = flow.bytes;
        rates_[end] = 0.0;
        flow_keys_[end] = flow_key(flow);
        ++end;
    }
    t.flows_left = static_cast<int>(end - first);
    flow_transfers_.resize(end);
    flows_.resize(end);
    remaining_.resize(end);
    rates_.resize(end);
    flow_keys_.resize(end);
    if (t.flows_left == 0) {
        trajectory_ = -1;  // nothing to record: the phase has no flow
        finish_phase(slot);
        return;
    }
    reallocate();
    if (trajectory_ >= 0) record_point(nullptr);
}

void FlowNetwork::set_flows_left(const Scratch::RateMemo::Trajectory& trajectory) {
    // In order: a slot taken again by a later ordinal gets that one's count (an earlier one's is 0).
    const std::uint32_t* left = trajectory.left.data() + point_ * trajectory.transfers;
    for (std::size_t o = 0; o < trajectory.transfers; ++o)
        transfers_[static_cast<std::size_t>(ordinal_slots_[o])].flows_left = static_cast<int>(left[o]);
}

void FlowNetwork::materialize() {
    const auto& trajectory = scratch_->rates.trajectories[static_cast<std::size_t>(trajectory_)];
    const std::size_t first = trajectory.first[point_];
    const std::size_t n = trajectory.flows_at(point_);
    flow_transfers_.resize(n);
    flows_.resize(n);
    flow_keys_.resize(n);
    for (std::size_t i = 0; i < n; ++i) {
        flow_transfers_[i] = ordinal_slots_[trajectory.transfer[first + i]];
        flows_[i] = trajectory.flow[first + i];
        flow_keys_[i] = flow_key(*flows_[i]);
    }
    remaining_.assign(trajectory.remaining.begin() + static_cast<std::ptrdiff_t>(first),
                      trajectory.remaining.begin() + static_cast<std::ptrdiff_t>(first + n));
    rates_.assign(trajectory.rate.begin() + static_cast<std::ptrdiff_t>(first),
                  trajectory.rate.begin() + static_cast<std::ptrdiff_t>(first + n));
    last_update_ = trajectory_start_ + trajectory.at[point_];
    materialized_ = true;
}

std::uint8_t FlowNetwork::ordinal_of(int slot) const {
    // A slot's flows in flight are its latest ordinal's (an earlier one's phase has ended).
    std::size_t o = ordinal_slots_.size();
    while (o > 0 && ordinal_slots_[o - 1] != slot) --o;
    PODSIM_ASSERT(o > 0, "a flow of a transfer outside the trajectory");
    return static_cast<std::uint8_t>(o - 1);
}

void FlowNetwork::record_point(const std::vector<int>* finished) {
    auto& memo = scratch_->rates;
    auto& trajectory = memo.trajectories[static_cast<std::size_t>(trajectory_)];
    // Another network may have recorded the same trajectory in step with this one: the same points.
    if (trajectory.points() != point_) return;
    const std::size_t n = flows_.size();
    if (memo.trajectory_values + n > kMaxTrajectoryValues) {
        trajectory_ = -1;  // the points so far stay valid
        return;
    }
    memo.trajectory_values += n;
    trajectory.at.push_back(engine_.now() - trajectory_start_);
    trajectory.next.push_back(n > 0 ? last_delay_ : 0);
    trajectory.first.push_back(static_cast<std::uint32_t>(trajectory.flow.size()));
    point_left_.assign(trajectory.transfers, 0);
    for (std::size_t i = 0; i < n; ++i) {
        const std::uint8_t o = ordinal_of(flow_transfers_[i]);
        trajectory.flow.push_back(flows_[i]);
        trajectory.transfer.push_back(o);
        ++point_left_[o];
    }
    trajectory.remaining.insert(trajectory.remaining.end(), remaining_.begin(), remaining_.end());
    trajectory.rate.insert(trajectory.rate.end(), rates_.begin(), rates_.end());
    trajectory.left.insert(trajectory.left.end(), point_left_.begin(), point_left_.end());
    trajectory.first_finished.push_back(static_cast<std::uint32_t>(trajectory.finished.size()));
    if (finished)
        for (int slot : *finished) trajectory.finished.push_back(ordinal_of(slot));
}

void FlowNetwork::replay_event(core::Time now) {
    const auto& trajectory = scratch_->rates.trajectories[static_cast<std::size_t>(trajectory_)];
    PODSIM_ASSERT(now == trajectory_start_ + trajectory.at[point_], "a trajectory replayed out of step");
    last_update_ = now;
    set_flows_left(trajectory);
    finished_.clear();
    const std::size_t end =
        point_ + 1 < trajectory.points() ? trajectory.first_finished[point_ + 1] : trajectory.finished.size();
    for (std::size_t k = trajectory.first_finished[point_]; k < end; ++k)
        finished_.push_back(ordinal_slots_[trajectory.finished[k]]);
    // As on_event: the next completion check, then the ended phases' next steps.
    if (trajectory.flows_at(point_) > 0) {
        ++generation_;
        engine_.schedule_after(trajectory.next[point_], *this, generation_);
    } else {  // every flow arrived: the network is idle
        trajectory_ = -1;
        materialized_ = true;
    }
    for (std::size_t i = 0; i < finished_.size(); ++i) finish_phase(finished_[i]);
}

void FlowNetwork::finish_phase(int slot) {
    Transfer& t = transfers_[static_cast<std::size_t>(slot)];
    ++t.phase;
    begin_phase(slot);
}

void FlowNetwork::advance_to(core::Time now) {
    const double elapsed = core::to_seconds(now - last_update_);
    last_update_ = now;
    if (elapsed <= 0.0) return;
    const std::size_t n = flows_.size();
    double* remaining = remaining_.data();
    const double* rates = rates_.data();
    if (!count_link_bytes_) {
        for (std::size_t i = 0; i < n; ++i) remaining[i] -= std::min(remaining[i], rates[i] * elapsed);
        return;
    }
    for (std::size_t i = 0; i < n; ++i) {
        const double moved = std::min(remaining[i], rates[i] * elapsed);
        remaining[i] -= moved;
        for (int link : flows_[i]->links) link_bytes_[static_cast<std::size_t>(link)] += moved;
    }
}

void FlowNetwork::reallocate() {
    if (!reuse_rates_) {
        solve_rates();
        schedule_next_arrival();
        return;
    }
    // The same flows in the same order on the same links always get the same rates.
    auto& memo = scratch_->rates;
    const std::uint64_t hash = flows_hash(flow_keys_, bandwidth_);
    if (const std::vector<double>* rates = memo_find(memo, hash, bandwidth_, flow_keys_)) {
        std::copy(rates->begin(), rates->end(), rates_.begin());
    } else {
        solve_rates();
        memo_insert(memo, hash, bandwidth_, flow_keys_, rates_);
    }
    schedule_next_arrival();
}

void FlowNetwork::schedule_next_arrival() {
    // Two running minima, so that the divisions do not wait for each other's comparisons: the
    // times are positive, so the minimum does not depend on the order they are compared in.
    double soonest = std::numeric_limits<double>::infinity();
    double soonest_odd = soonest;
    const std::size_t n = flows_.size();
    const double* remaining = remaining_.data();
    const double* rates = rates_.data();
    std::size_t i = 0;
    for (; i + 2 <= n; i += 2) {
        soonest = std::min(soonest, remaining[i] / rates[i]);
        soonest_odd = std::min(soonest_odd, remaining[i + 1] / rates[i + 1]);
    }
    if (i < n) soonest = std::min(soonest, remaining[i] / rates[i]);
    soonest = std::min(soonest, soonest_odd);
    ++generation_;
    last_delay_ = core::from_seconds(soonest);
    engine_.schedule_after(last_delay_, *this, generation_);
}

void FlowNetwork::solve_rates() {
    // Progressive filling: repeatedly find the link with the smallest fair share among the flows
    // not yet fixed, and fix those flows at that share.
    // unfixed_on_link_ is all zeros between calls: only the links of active flows are touched.
    std::vector<int>& touched = scratch_->touched;
    auto& capacity_ = scratch_->capacity;
    auto& unfixed_on_link_ = scratch_->unfixed_on_link;
    auto& first_flow_ = scratch_->first_flow;
    auto& next_flow_ = scratch_->next_flow;
    auto& flows_by_link_ = scratch_->flows_by_link;
    touched.clear();
    const std::size_t n = flows_.size();
    for (std::size_t i = 0; i < n; ++i) {
        rates_[i] = -1.0;
        for (int link : flows_[i]->links) {
            auto l = static_cast<std::size_t>(link);
            if (unfixed_on_link_[l]++ == 0) {
                capacity_[l] = (*bandwidth_)[l];
                touched.push_back(link);
            }
        }
    }
    // Flows by link (in active order, so that flows are fixed in the same order as by a scan of
    // the active flows): the bottleneck's flows are found without looking at the others.
    std::size_t total = 0;
    for (int link : touched) {
        auto l = static_cast<std::size_t>(link);
        first_flow_[l] = total;
        next_flow_[l] = total;
        total += static_cast<std::size_t>(unfixed_on_link_[l]);
    }
    flows_by_link_.resize(total);
    for (std::size_t i = 0; i < n; ++i) {
        for (int link : flows_[i]->links) flows_by_link_[next_flow_[static_cast<std::size_t>(link)]++] = i;
    }
    std::size_t unfixed = n;
    std::size_t live = touched.size();  // links with unfixed flows: a prefix of touched, in order
    while (unfixed > 0) {
        double best = std::numeric_limits<double>::infinity();
        int bottleneck = -1;
        std::size_t kept = 0;
        for (std::size_t k = 0; k < live; ++k) {
            const int link = touched[k];
            auto l = static_cast<std::size_t>(link);
            if (unfixed_on_link_[l] == 0) continue;
            touched[kept++] = link;  // stable: ties still go to the first link in touched order
            double share = capacity_[l] / unfixed_on_link_[l];
            if (share < best) {
                best = share;
                bottleneck = link;
            }
        }
        live = kept;
        PODSIM_ASSERT(bottleneck >= 0, "flows without links");
        const auto b = static_cast<std::size_t>(bottleneck);
        for (std::size_t k = first_flow_[b]; k < next_flow_[b]; ++k) {
            const std::size_t f = flows_by_link_[k];
            if (rates_[f] >= 0.0) continue;
            rates_[f] = best;
            --unfixed;
            for (int link : flows_[f]->links) {
                auto l = static_cast<std::size_t>(link);
                capacity_[l] -= best;
                --unfixed_on_link_[l];
            }
        }
    }
    // Every flow is fixed, so every count is back to zero (the invariant the next call relies on).
}

void FlowNetwork::on_event(core::Time now, std::uint64_t tag) {
    if (tag & kLatencyBit) {
        inject_flows(static_cast<int>(tag & ~kLatencyBit));
        return;
    }
    if (tag != generation_) return;  // superseded by a later reallocation
    if (trajectory_ >= 0) {
        ++point_;
        if (!materialized_) {
            if (point_ < scratch_->rates.trajectories[static_cast<std::size_t>(trajectory_)].points()) {
                replay_event(now);
                return;
            }
            --point_;  // the recording ends here: take its last state up, and record on
            materialize();
            ++point_;
        }
    }
    advance_to(now);
    finished_.clear();
    const std::size_t n = flows_.size();
    std::size_t kept = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const double remaining = remaining_[i];
        // Arrived: nothing left, or less than a picosecond's worth at its rate.
        if (remaining <= kBytesEpsilon || remaining <= rates_[i] * 1e-12) {
            if (count_link_bytes_)
                for (int link : flows_[i]->links) link_bytes_[static_cast<std::size_t>(link)] += remaining;
            Transfer& t = transfers_[static_cast<std::size_t>(flow_transfers_[i])];
            if (--t.flows_left == 0) finished_.push_back(flow_transfers_[i]);
        } else {
            // Most events retire none or a few at the end. Rates are not kept: reallocate() below
            // sets every one.
            if (kept != i) {
                flow_transfers_[kept] = flow_transfers_[i];
                flows_[kept] = flows_[i];
                remaining_[kept] = remaining;
                flow_keys_[kept] = flow_keys_[i];
            }
            ++kept;
        }
    }
    flow_transfers_.resize(kept);
    flows_.resize(kept);
    remaining_.resize(kept);
    rates_.resize(kept);
    flow_keys_.resize(kept);
    if (kept > 0) reallocate();
    if (trajectory_ >= 0) {
        record_point(&finished_);
        if (kept == 0) trajectory_ = -1;  // idle
    }
    // Finishing a phase may start the transfer's next phase or another transfer, never this loop.
    for (std::size_t i = 0; i < finished_.size(); ++i) finish_phase(finished_[i]);
}

void FlowNetwork::snapshot(core::Time now, std::uint64_t tag_base, Snapshot& out) const {
    auto relative = [tag_base](std::uint64_t tag) { return static_cast<std::int64_t>(tag - tag_base); };
    out.transfers.clear();
    for (const Transfer& t : transfers_)
        if (t.in_use)
            out.transfers.push_back(
                Snapshot::TransferState{t.phases, relative(t.tag), t.phase, t.flows_left});
    std::sort(
        out.transfers.begin(), out.transfers.end(),
        [](const Snapshot::TransferState& a, const Snapshot::TransferState& b) { return a.tag < b.tag; });
    out.active.clear();
    if (trajectory_ >= 0 && !materialized_) {
        const auto& trajectory = scratch_->rates.trajectories[static_cast<std::size_t>(trajectory_)];
        const std::size_t first = trajectory.first[point_];
        for (std::size_t i = first; i < first + trajectory.flows_at(point_); ++i) {
            const auto slot = static_cast<std::size_t>(ordinal_slots_[trajectory.transfer[i]]);
            out.active.push_back(Snapshot::FlowState{relative(transfers_[slot].tag), trajectory.flow[i],
                                                     trajectory.remaining[i], trajectory.rate[i]});
        }
        out.since_update = now - last_update_;  // a replayed point has flows in flight
        return;
    }
    for (std::size_t i = 0; i < flows_.size(); ++i)
        out.active.push_back(
            Snapshot::FlowState{relative(transfers_[static_cast<std::size_t>(flow_transfers_[i])].tag),
                                flows_[i], remaining_[i], rates_[i]});
    // The time since the last update only scales the progress of active flows: without any, it has
    // no effect (an idle network a period later is in the same state).
    out.since_update = flows_.empty() ? 0 : now - last_update_;
}

void FlowNetwork::describe_tag(std::uint64_t tag, std::uint64_t tag_base,
                               std::vector<std::int64_t>& out) const {
    if (tag & kLatencyBit) {
        const Transfer& t = transfers_[static_cast<std::size_t>(tag & ~kLatencyBit)];
        out.push_back(-1);
        out.push_back(static_cast<std::int64_t>(t.tag - tag_base));
        return;
    }
    out.push_back(
        static_cast<std::int64_t>(generation_ - tag));  // 0 for the live check, more for superseded ones
}

void FlowNetwork::jump(core::Time delta, std::uint64_t tag_delta,
                       const std::vector<double>& link_bytes_per_period, double periods) {
    last_update_ += delta;
    trajectory_start_ += delta;
    for (Transfer& t : transfers_)
        if (t.in_use) t.tag += tag_delta;
    if (link_bytes_.empty() && !link_bytes_per_period.empty()) link_bytes_.assign(bandwidth_->size(), 0.0);
    for (std::size_t l = 0; l < link_bytes_per_period.size(); ++l)
        link_bytes_[l] += periods * link_bytes_per_period[l];
}

}  // namespace podsim::network
