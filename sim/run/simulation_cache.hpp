#pragma once

#include <algorithm>
#include <cstddef>
#include <deque>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <variant>
#include <vector>

#include "collectives/comm_plan.hpp"
#include "hardware/slice_shape.hpp"
#include "hardware/topology_spec.hpp"
#include "network/axis_mapping.hpp"
#include "network/flow_network.hpp"
#include "network/mesh_spec.hpp"
#include "network/torus.hpp"
#include "parallel/partition.hpp"
#include "parallel/program_names.hpp"
#include "parallel/runtime_spec.hpp"
#include "scheduler/scheduler.hpp"
#include "scheduler/transfer_alone.hpp"
#include "workload/model_spec.hpp"
#include "workload/op_graph.hpp"
#include "workload/training_spec.hpp"

namespace podsim::run {

// A collective lowered onto the torus, with its run alone (for collectives no other can contend with).
struct CachedPlan {
    collectives::CommPlan plan;
    scheduler::TransferAlone alone;
};

// The network plan (run::plan_network) of the last config that ran a kept partitioned step, for the
// next config that resizes the same step: which ops share which plan, each plan's key, the plans and
// the contention classes. Reused while the cache has dropped no plan since (a plan it returns for a
// key is then the one held here).
struct NetworkMemo {
    bool valid = false;
    std::uint64_t plan_generation = 0;  // SimulationCache::plan_generation() when made
    const network::Torus* torus = nullptr;
    double hop_latency = 0.0, launch_overhead = 0.0, link_efficiency = 0.0;
    bool link_bytes = false;
    struct Slot {
        int comm_axis = 0;
        int kind = 0;
        double bytes = 0.0;
    };
    std::vector<int> plan_of_op;      // index into slots and plans, or -1
    std::vector<int> collective_ops;  // the ops with a plan, in program order
    std::vector<Slot> slots;          // per plan, in order of first use
    std::vector<std::shared_ptr<const CachedPlan>> plans;
    std::vector<int> network_of_op;  // scheduler::ContentionClasses
    std::vector<bool> alone;
};

// A partitioned step, with the dependencies the scheduler keeps: in the cache, valid until its next
// partition(); null when the step was too big to keep (the scheduler builds them). `network` is the
// kept step's NetworkMemo, valid as long as `dependencies`.
struct PartitionedStep {
    parallel::DeviceProgram program;
    const scheduler::Dependencies* dependencies = nullptr;
    NetworkMemo* network = nullptr;
};

// A lowered step, with the device op names of every program partitioned from it.
struct LoweredStep {
    std::shared_ptr<const workload::OpGraph> graph;
    std::shared_ptr<parallel::ProgramNames> names;
};

// What configs of a sweep share: lowered steps per (model, training), partitioned steps per (lowered
// step, mesh, placement, runtime, training but the batch), tori per (ICI, slice), and collective
// plans with their runs alone per (torus, kind, bytes, placement, latency, bandwidth), with or
// without the links' bytes.
// Entries are pure functions of their keys, so results never depend on what the cache holds, on the
// order of the configs or on the number of workers. One per worker (not thread-safe); bounded, so
// memory stays flat however many configs go through it.
class SimulationCache {
  public:
    LoweredStep lowered(const workload::ModelSpec& model, const workload::TrainingSpec& training);
    // network::map_mesh_axes, kept for the last (topology, slice, mesh): a sweep's configs come in
    // runs that differ only in the batch.
    using MeshAxes = std::variant<std::vector<network::AxisMapping>, std::string>;
    const MeshAxes& mesh_axes(const hardware::TopologySpec& topology, const hardware::SliceShape& slice,
                              const network::MeshSpec& mesh);
    std::shared_ptr<const network::Torus> torus(const hardware::TopologySpec& topology,
                                                const hardware::SliceShape& slice, bool twisted);
    // The torus links' bandwidths at `link_efficiency` (network::effective_link_bandwidth).
    const std::vector<double>& link_bandwidth(const std::shared_ptr<const network::Torus>& torus,
                                              double link_efficiency);
    // The scheduler's storage, lent to one schedule() at a time.
    scheduler::ScheduleScratch& schedule_scratch() { return schedule_scratch_; }
    // Working arrays of the max-min solver for at least `links` links, for one network at a time.
    network::FlowNetwork::Scratch& scratch(std::size_t links);
    // partition(input) of `graph` (input.graph): a copy of the program of an earlier config that
    // differed at most in the batch, resized (parallel::resize), or partitioned and kept; with the
    // program's scheduler::dependencies, which resizing does not change.
    PartitionedStep partition(const parallel::PartitionInput& input,
                              const std::shared_ptr<const workload::OpGraph>& graph);
    std::shared_ptr<const CachedPlan> plan(const std::shared_ptr<const network::Torus>& torus,
                                           collectives::CollectiveKind kind, double bytes,
                                           const std::vector<network::AxisDimPart>& parts, double hop_latency,
                                           double launch_overhead, double link_efficiency,
                                           bool link_bytes = true);
    // Counts the times cached plans were dropped (the bounds above): a plan held since the same count
    // is the one plan() returns for its key.
    std::uint64_t plan_generation() const { return plan_generation_; }

  private:
    struct TorusEntry {
        hardware::IciSpec ici;
        int devices_per_chip = 1;           // the device grid's intra-chip dimension
        double intra_chip_bandwidth = 0.0;  // and its links
        hardware::SliceShape slice;
        bool twisted = false;
        std::shared_ptr<const network::Torus> torus;
    };
    // A plan's key; with the placement by reference (PlanQuery), a lookup copies nothing.
    template <class Parts>
    struct PlanFields {
        const network::Torus* torus = nullptr;
        int kind = 0;
        double bytes = 0.0, hop_latency = 0.0, launch_overhead = 0.0, link_efficiency = 0.0;
        bool link_bytes = true;  // whether the run alone counted each link's bytes
        Parts parts;
    };
    using PlanKey = PlanFields<std::vector<network::AxisDimPart>>;
    using PlanQuery = PlanFields<const std::vector<network::AxisDimPart>&>;
    // Field by field, the placement last (part by part).
    struct PlanOrder {
        using is_transparent = void;
        template <class A, class B>
        bool operator()(const A& a, const B& b) const {
            const auto head = [](const auto& k) {
                return std::tie(k.torus, k.kind, k.bytes, k.hop_latency, k.launch_overhead, k.link_efficiency,
                                k.link_bytes);
            };
            if (head(a) != head(b)) return head(a) < head(b);
            return std::lexicographical_compare(
                a.parts.begin(), a.parts.end(), b.parts.begin(), b.parts.end(),
                [](const network::AxisDimPart& x, const network::AxisDimPart& y) {
                    return std::tie(x.dim, x.size, x.stride, x.wraps) <
                           std::tie(y.dim, y.size, y.stride, y.wraps);
                });
        }
    };

    std::map<std::string, LoweredStep> lowered_;
    struct MeshAxesEntry {
        hardware::TopologySpec topology;
        hardware::SliceShape slice;
        network::MeshSpec mesh;
        MeshAxes axes;
    };
    std::optional<MeshAxesEntry> mesh_axes_;
    struct PartitionEntry {
        std::shared_ptr<const workload::OpGraph> graph;  // keeps the address compared alive
        workload::TrainingSpec training;                 // with global_batch 0
        network::MeshSpec mesh;
        std::vector<network::AxisMapping> placement;
        parallel::RuntimeSpec runtime;
        int split_k_multiprocessors = 0;
        std::int64_t global_batch = 0;  // the batch `resizable` is sized for
        parallel::ResizableProgram resizable;
        scheduler::Dependencies dependencies;
        NetworkMemo network;
    };
    // A ring: a new step overwrites the oldest in place, into the storage it already holds (a
    // sweep's workers would otherwise free and allocate long-lived blocks of every size, and their
    // resident memory creep up).
    std::vector<PartitionEntry> partitions_;
    std::size_t next_partition_ = 0;
    std::vector<TorusEntry> tori_;
    std::map<PlanKey, std::shared_ptr<const CachedPlan>, PlanOrder> plans_;
    std::uint64_t plan_generation_ = 0;
    // An id per distinct path (link ids) of the plans' flows (network::Flow::path_id), from 1.
    std::map<std::vector<int>, std::uint32_t> path_ids_;
    struct BandwidthEntry {
        const network::Torus* torus = nullptr;
        double link_efficiency = 0.0;
        std::vector<double> link_bandwidth;
    };
    std::deque<BandwidthEntry> bandwidths_;  // keyed by torus address, as plans_; stable references
    std::unique_ptr<network::FlowNetwork::Scratch> scratch_;
    scheduler::ScheduleScratch schedule_scratch_;
};

}  // namespace podsim::run
