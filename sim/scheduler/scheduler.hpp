#pragma once

#include <memory>
#include <vector>

#include "collectives/comm_plan.hpp"
#include "cost/cost_model.hpp"
#include "network/flow_network.hpp"
#include "parallel/device_program.hpp"
#include "parallel/runtime_spec.hpp"
#include "scheduler/periods.hpp"
#include "scheduler/timeline.hpp"
#include "scheduler/transfer_alone.hpp"

namespace podsim::scheduler {

// Runs the device program on its resources in a discrete-event simulation. Each resource (the
// TensorCore, each ICI mesh axis, DCN, the host) executes its ops one at a time in program order,
// like an in-order XLA stream; an op starts when its resource is free and every op it depends on
// has finished. With synchronous collectives (runtime.async() false) a collective also waits for
// the compute before it and the compute after it waits for the collective, so communication
// blocks the TensorCore; with async ones only data dependencies order them and they overlap.
//
// With a network, ICI collectives with a plan are not given a fixed duration: their flows run on
// the shared links of the flow-level network model and finish when their last phase does.
//
// Collectives share bandwidth only with collectives whose links they cross. Mesh axes whose plans
// share no link with another axis's are separate contention classes, each on its own flow network
// (max-min fairness on disjoint links is independent); an axis that is a class of its own runs one
// collective at a time, so each of its collectives runs as if alone (transfer_alone.hpp), and with
// `alone_of_op` set the scheduler takes its duration from that run instead of replaying its flows.
struct NetworkInput {
    std::vector<const collectives::CommPlan*> plan_of_op;  // indexed like program.ops; null = fixed cost
    const std::vector<double>* link_bandwidth = nullptr;   // bytes/s per torus link id, borrowed
    std::vector<int> network_of_op;                        // contention class per op; empty = one network
    std::vector<const TransferAlone*> alone_of_op;         // empty, or per op: its run alone, or null
    // The max-min solver's working arrays (at least one entry per link), borrowed: the contention
    // classes' networks never reallocate at the same time, so one serves them all.
    network::FlowNetwork::Scratch* scratch = nullptr;
};

// Contention classes of the program's ICI collectives (network_of_op of NetworkInput), and which
// classes are served by one resource only (so that their collectives never overlap).
struct ContentionClasses {
    std::vector<int> network_of_op;  // -1 for ops without a plan
    std::vector<bool> alone;         // per class
    int count = 0;
};
ContentionClasses contention_classes(const parallel::DeviceProgram& program,
                                     const std::vector<const collectives::CommPlan*>& plan_of_op);

// The edges an op of a program waits for, as the scheduler keeps them (redundant ones dropped),
// with successors and predecessors as CSR lists. They depend on the program's ops and deps and on
// whether collectives are synchronous, not on sizes: programs resized for another batch share them.
struct Dependencies {
    std::vector<int> pending;  // per op: the edges it waits for
    std::vector<std::size_t> succ_begin;
    std::vector<int> successors;  // op i's: successors[succ_begin[i]..succ_begin[i + 1])
    std::vector<std::size_t> pred_begin;
    std::vector<int> preds;
};
Dependencies dependencies(const parallel::DeviceProgram& program, const parallel::RuntimeSpec& runtime);

// Storage one schedule() leaves to the next (run::SimulationCache keeps one per worker): the
// scheduler's working arrays and period snapshots keep their capacity from one config to the next
// instead of being allocated again. Holds no state: results never depend on it.
class ScheduleScratch {
  public:
    ScheduleScratch();
    ~ScheduleScratch();
    ScheduleScratch(const ScheduleScratch&) = delete;
    ScheduleScratch& operator=(const ScheduleScratch&) = delete;
    struct Storage;  // scheduler.cpp
    std::unique_ptr<Storage> storage;
};

struct ScheduleOptions {
    // Find runs of identical periods (layers) whose state repeats and jump over them instead of
    // simulating each one; the timeline is the same (docs/model.md, "Simulating fast").
    bool jump_periods = false;
    // Count the bytes each torus link carries (Timeline::link_bytes). No step report shows them
    // yet; the equivalence test checks that the fast paths count them as the full simulation does.
    bool count_link_bytes = false;
    // Reuse the max-min rates of a set of flows solved before in this step (FlowNetwork::Scratch::
    // rates): the same rates, without solving again. Off in the full simulation, the oracle.
    bool reuse_rates = false;
    // Two-block regions whose periodicity is to be certified without jumping (run/fold.hpp, folding
    // microbatches): Timeline::watched says, for each, whether the scheduler's state when its second
    // block started repeated the state when its first did. Blocks that are not identical are not
    // watched.
    std::vector<PeriodicRegion> watch = {};
    // dependencies(program, runtime), when the caller has them (run::SimulationCache); else built.
    const Dependencies* dependencies = nullptr;
    ScheduleScratch* scratch = nullptr;  // storage to reuse, when the caller keeps one
};

Timeline schedule(const parallel::DeviceProgram& program, const std::vector<cost::OpCost>& costs,
                  const parallel::RuntimeSpec& runtime, const NetworkInput* network = nullptr,
                  ScheduleOptions options = {});

}  // namespace podsim::scheduler
