#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "core/engine.hpp"
#include "network/flow.hpp"

namespace podsim::network {

// Told when a transfer started with FlowNetwork::start has finished.
class TransferListener {
  public:
    virtual ~TransferListener() = default;
    virtual void on_transfer_done(core::Time now, std::uint64_t tag) = 0;
};

// Flow-level model of the ICI links inside the discrete-event simulation. Flows in flight share
// every link they cross by max-min fairness (progressive filling): the most contended link sets the
// rate of its flows, which are then fixed, and so on. Rates are recomputed whenever a flow starts or
// ends, so two collectives on the same links slow each other and collectives on disjoint links do
// not. Transfers (collectives) run phase after phase: hop latency first, then the phase's flows.
class FlowNetwork final : public core::EventHandler {
  public:
    // Per-link working arrays of the max-min solver. Networks that never reallocate at the same time
    // (several on one engine) can share one, so that each costs no memory in proportion to the torus.
    struct Scratch {
        std::vector<double> capacity;
        std::vector<int> unfixed_on_link;  // all zeros between reallocations
        std::vector<int> touched;
        std::vector<std::size_t> first_flow, next_flow;  // per link: its range in flows_by_link
        std::vector<std::size_t> flows_by_link;          // indices into the active flows
        // The rates of each set of active flows solved since the last network was built on this
        // scratch: a step's networks meet the same few sets of flows over and over (150 distinct of
        // 7,638 reallocations on a 16x16x16 175B step), and the rates depend on nothing else than
        // the flows' links and the links' bandwidths. Keyed by flow paths (Flow::path_id) or flow
        // addresses, which stay valid while the networks built since the last clear run.
        struct RateMemo {
            struct Entry {
                std::uint64_t hash = 0;
                const std::vector<double>* bandwidth = nullptr;
                std::vector<std::uint64_t> flows;  // in active order (flow_key)
                std::vector<double> rates;         // bytes/s, per flow
            };
            std::vector<Entry> entries;
            std::vector<std::uint32_t> slots;  // open addressing: entry index + 1, 0 when empty
            // How the network ran from a state it reached before, until the next transfer's flows
            // joined: the state after each reallocation and completion check, as the network
            // computed it. A root is a phase started on an idle network; a child, the state of its
            // parent at one of its points, `offset` later, when the flows of `phase` joined. Such a
            // run is a function of that key and the bandwidths alone (the network sees only time
            // differences, in integer picoseconds), so a network that reaches the same state
            // replays it event by event without touching its flows, and takes the recorded state
            // up where the recording ends. Transfers are named by the order they joined in
            // (ordinals), not by their slots.
            struct Trajectory {
                int parent = -1;
                std::size_t parent_point = 0;
                core::Time offset = 0;
                const FlowPhase* phase = nullptr;
                const std::vector<double>* bandwidth = nullptr;
                std::size_t transfers = 1;                  // ordinals: the parent's, and the one that joined
                std::vector<core::Time> at;                 // per point: since the flows of `phase` joined
                std::vector<core::Time> next;               // per point: delay of its completion check
                std::vector<std::uint32_t> first;           // per point: its range in the four arrays below
                std::vector<const Flow*> flow;              // active flows
                std::vector<std::uint8_t> transfer;         // their transfers' ordinals
                std::vector<double> remaining, rate;        // bytes, bytes/s
                std::vector<std::uint32_t> left;            // per point and ordinal: flows in flight
                std::vector<std::uint32_t> first_finished;  // per point: its range in `finished`
                std::vector<std::uint8_t> finished;         // ordinals whose phase ended there, in order
                std::size_t points() const { return at.size(); }
                std::size_t flows_at(std::size_t point) const;
            };
            std::vector<Trajectory> trajectories;
            std::vector<std::uint32_t> trajectory_slots;  // open addressing, as `slots`
            std::size_t trajectory_values = 0;            // flows over all points, for the bound
            void clear();
            bool full() const;  // new sets are no longer remembered
            // The trajectory with this key, made empty when new; -1 when none can be made.
            int trajectory(int parent, std::size_t parent_point, core::Time offset, const FlowPhase* phase,
                           const std::vector<double>* bandwidth);
        };
        RateMemo rates;
        // Keep the memo when a network is built on this scratch: its owner then clears it whenever
        // a flow or bandwidth vector the memo names may be freed or moved (run::SimulationCache, whose
        // cached plans outlive the configs of a sweep). By default each new network clears it.
        bool keep_rates = false;
        explicit Scratch(std::size_t links);
    };

    FlowNetwork(core::Engine& engine, std::vector<double> link_bandwidth);
    // Borrows the bandwidths and the scratch, which must outlive the network. Without
    // `count_link_bytes` the links' bytes are not counted (link_bytes() stays empty): a step
    // simulation that reports none skips a pass over every flow's links at each reallocation.
    // Without `reuse_rates` every reallocation is solved (the full simulation, the oracle of the
    // fast paths, does not use the scratch's memo).
    FlowNetwork(core::Engine& engine, const std::vector<double>& link_bandwidth, Scratch& scratch,
                bool count_link_bytes = true, bool reuse_rates = true);
    FlowNetwork(const FlowNetwork&) = delete;
    FlowNetwork& operator=(const FlowNetwork&) = delete;

    // Runs `phases` (a collective's plan) one after the other; `phases` must outlive the transfer.
    void start(const std::vector<FlowPhase>& phases, TransferListener& listener, std::uint64_t tag);
    void on_event(core::Time now, std::uint64_t tag) override;

    // Bytes each link carried so far (both for reports and tests); empty while a network with
    // borrowed bandwidths has carried nothing, and when it does not count them.
    const std::vector<double>& link_bytes() const { return link_bytes_; }
    std::size_t active_flows() const;

    // The network's state as seen from `now`, with transfer tags relative to `tag_base`: two
    // snapshots that compare equal evolve alike (for a scheduler that detects a periodic steady state).
    // Transfers are named by their tags, not by the slots they hold: which free slot a transfer
    // takes changes no time (flows are kept, solved and retired in the order they were added).
    struct Snapshot {
        struct TransferState {
            const std::vector<FlowPhase>* phases;
            std::int64_t tag;  // relative to tag_base
            std::size_t phase;
            int flows_left;
            bool operator==(const TransferState&) const = default;
        };
        struct FlowState {
            std::int64_t transfer;  // its transfer's tag, relative to tag_base
            const Flow* flow;
            double remaining;
            double rate;
            bool operator==(const FlowState&) const = default;
        };
        std::vector<TransferState> transfers;  // those in flight, by tag
        std::vector<FlowState> active;
        core::Time since_update = 0;
        bool operator==(const Snapshot&) const = default;
    };
    void snapshot(core::Time now, std::uint64_t tag_base, Snapshot& out) const;
    // One of this network's event tags in a form that does not depend on how many reallocations
    // came before (completion checks are numbered by generation) nor on the slot of the transfer it
    // is for (its tag relative to `tag_base` instead), appended to `out`.
    void describe_tag(std::uint64_t tag, std::uint64_t tag_base, std::vector<std::int64_t>& out) const;
    // After the engine jumped `delta` ahead: the transfers' tags move by `tag_delta`, and the links
    // have carried `link_bytes_per_period` `periods` more times.
    void jump(core::Time delta, std::uint64_t tag_delta, const std::vector<double>& link_bytes_per_period,
              double periods);

  private:
    struct Transfer {
        const std::vector<FlowPhase>* phases = nullptr;
        TransferListener* listener = nullptr;
        std::uint64_t tag = 0;
        std::size_t phase = 0;
        int flows_left = 0;
        bool in_use = false;
    };
    void begin_phase(int transfer);
    void inject_flows(int transfer);
    void finish_phase(int transfer);
    void advance_to(core::Time now);
    void reallocate();
    void solve_rates();  // max-min rates of the active flows, into rates_
    void schedule_next_arrival();
    // Replaying a recorded trajectory (Scratch::RateMemo::Trajectory): the active flows are those of
    // its point `point_`, not in the arrays below until materialize() puts them there.
    void materialize();
    void set_flows_left(const Scratch::RateMemo::Trajectory& trajectory);  // at point_
    std::uint8_t ordinal_of(int slot) const;
    void record_point(const std::vector<int>* finished);  // the state now, as point_
    void replay_event(core::Time now);

    core::Engine& engine_;
    std::vector<double> owned_bandwidth_;
    const std::vector<double>* bandwidth_;
    std::unique_ptr<Scratch> owned_scratch_;
    Scratch* scratch_;
    std::vector<double> link_bytes_;  // sized on first use
    bool count_link_bytes_ = true;
    bool reuse_rates_ = true;
    std::vector<Transfer> transfers_;
    std::vector<int> free_transfers_;
    // The active flows, one array per field (in the order they were added): each pass over them
    // reads only what it needs, and the memo keys are the lookup key as they stand.
    std::vector<int> flow_transfers_;
    std::vector<const Flow*> flows_;
    std::vector<double> remaining_;         // bytes
    std::vector<double> rates_;             // bytes/s
    std::vector<std::uint64_t> flow_keys_;  // each flow in the rate memo's key (no load of the flow)
    std::vector<int> finished_;             // transfers whose phase ended at the current event (reused)
    core::Time last_update_ = 0;
    std::uint64_t generation_ = 0;  // invalidates completion events scheduled before a reallocation
    // The trajectory the network follows (-1: none): reached from an idle network by phases whose
    // states were all recorded. Replayed while `materialized_` is false; recorded (appended to,
    // from the arrays above) while it is true.
    int trajectory_ = -1;
    std::size_t point_ = 0;                  // the trajectory's point the network is at
    bool materialized_ = true;               // the arrays above hold the active flows
    std::vector<int> ordinal_slots_;         // the slot of each of the trajectory's transfers
    core::Time trajectory_start_ = 0;        // when its last transfer's flows joined
    std::vector<std::uint32_t> point_left_;  // record_point's scratch
    core::Time last_delay_ = 0;              // of the last completion check scheduled
};

}  // namespace podsim::network
