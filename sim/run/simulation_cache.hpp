#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "collectives/comm_plan.hpp"
#include "hardware/slice_shape.hpp"
#include "hardware/topology_spec.hpp"
#include "network/torus.hpp"
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

// What configs of a sweep share: lowered steps per (model, training), tori per (ICI, slice), and
// collective plans with their runs alone per (torus, kind, bytes, placement, latency, bandwidth).
// Entries are pure functions of their keys, so results never depend on what the cache holds, on the
// order of the configs or on the number of workers. One per worker (not thread-safe); bounded, so
// memory stays flat however many configs go through it.
class SimulationCache {
  public:
    std::shared_ptr<const workload::OpGraph> lowered(const workload::ModelSpec& model,
                                                     const workload::TrainingSpec& training);
    std::shared_ptr<const network::Torus> torus(const hardware::TopologySpec& topology,
                                                const hardware::SliceShape& slice, bool twisted);
    std::shared_ptr<const CachedPlan> plan(const std::shared_ptr<const network::Torus>& torus,
                                           collectives::CollectiveKind kind, double bytes,
                                           const std::vector<network::AxisDimPart>& parts, double hop_latency,
                                           double launch_overhead, double link_efficiency);

  private:
    struct TorusEntry {
        hardware::IciSpec ici;
        hardware::SliceShape slice;
        bool twisted = false;
        std::shared_ptr<const network::Torus> torus;
    };
    using PlanKey = std::tuple<const network::Torus*, int, double,
                               std::vector<std::tuple<int, int, int, bool>>, double, double, double>;

    std::map<std::string, std::shared_ptr<const workload::OpGraph>> lowered_;
    std::vector<TorusEntry> tori_;
    std::map<PlanKey, std::shared_ptr<const CachedPlan>> plans_;
};

}  // namespace podsim::run
