#include "run/simulation_cache.hpp"

#include "workload/lower.hpp"

namespace podsim::run {
namespace {

// Bounds: a sweep over a few models, slices and meshes stays far below; past them a cache starts
// over (results do not change, only the work of recomputing).
constexpr std::size_t kMaxLowered = 64;
constexpr std::size_t kMaxTori = 16;
constexpr std::size_t kMaxPlans = 4096;

}  // namespace

std::shared_ptr<const workload::OpGraph> SimulationCache::lowered(const workload::ModelSpec& model,
                                                                  const workload::TrainingSpec& training) {
    std::string key = workload::lowering_key(model, training);
    auto it = lowered_.find(key);
    if (it != lowered_.end()) return it->second;
    if (lowered_.size() >= kMaxLowered) lowered_.clear();
    auto graph = std::make_shared<const workload::OpGraph>(workload::lower_training_step(model, training));
    lowered_.emplace(std::move(key), graph);
    return graph;
}

std::shared_ptr<const network::Torus> SimulationCache::torus(const hardware::TopologySpec& topology,
                                                             const hardware::SliceShape& slice,
                                                             bool twisted) {
    for (const auto& e : tori_) {
        if (e.twisted == twisted && e.slice == slice && e.ici == topology.ici) return e.torus;
    }
    if (tori_.size() >= kMaxTori) {
        tori_.clear();
        plans_.clear();  // keyed by torus address
    }
    auto t = std::make_shared<const network::Torus>(topology, slice, twisted);
    tori_.push_back({topology.ici, slice, twisted, t});
    return t;
}

std::shared_ptr<const CachedPlan> SimulationCache::plan(const std::shared_ptr<const network::Torus>& torus,
                                                        collectives::CollectiveKind kind, double bytes,
                                                        const std::vector<network::AxisDimPart>& parts,
                                                        double hop_latency, double launch_overhead,
                                                        double link_efficiency) {
    std::vector<std::tuple<int, int, int, bool>> placement;
    for (const auto& p : parts) placement.emplace_back(p.dim, p.size, p.stride, p.wraps);
    PlanKey key{torus.get(), static_cast<int>(kind), bytes,          std::move(placement),
                hop_latency, launch_overhead,        link_efficiency};
    auto it = plans_.find(key);
    if (it != plans_.end()) return it->second;
    if (plans_.size() >= kMaxPlans) plans_.clear();
    auto entry = std::make_shared<CachedPlan>();
    entry->plan = collectives::plan_collective(*torus, kind, bytes, parts, hop_latency, launch_overhead);
    std::vector<double> link_bandwidth;
    link_bandwidth.reserve(torus->links().size());
    for (const auto& link : torus->links()) link_bandwidth.push_back(link.bandwidth * link_efficiency);
    entry->alone = scheduler::run_alone(entry->plan.phases, link_bandwidth);
    std::shared_ptr<const CachedPlan> shared = std::move(entry);
    plans_.emplace(std::move(key), shared);
    return shared;
}

}  // namespace podsim::run
