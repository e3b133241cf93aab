#include "run/simulation_cache.hpp"

#include "core/assert.hpp"
#include "workload/lower.hpp"

namespace podsim::run {
namespace {

// Bounds: a sweep over a few models, slices and meshes stays far below; past them a cache starts
// over (results do not change, only the work of recomputing).
constexpr std::size_t kMaxLowered = 64;
constexpr std::size_t kMaxTori = 16;
constexpr std::size_t kMaxPlans = 4096;
constexpr std::size_t kMaxPaths = std::size_t{1} << 16;
// Partitioned steps: a sweep runs the configs that share one back to back on one worker
// (sweep_runner.cpp), so a few suffice, the oldest making way. Steps of more than 16,384 ops (3 MB;
// a 175B step with 8 microbatches has 3,000) are not kept: more memory per worker made a GPT-2 sweep
// slower, its workers' memory no longer in cache.
constexpr std::size_t kMaxPartitions = 4;
constexpr std::size_t kMaxPartitionOps = std::size_t{1} << 14;

}  // namespace

LoweredStep SimulationCache::lowered(const workload::ModelSpec& model,
                                     const workload::TrainingSpec& training) {
    std::string key = workload::lowering_key(model, training);
    auto it = lowered_.find(key);
    if (it != lowered_.end()) return it->second;
    if (lowered_.size() >= kMaxLowered) lowered_.clear();
    LoweredStep step;
    step.graph = std::make_shared<const workload::OpGraph>(workload::lower_training_step(model, training));
    step.names = std::make_shared<parallel::ProgramNames>(*step.graph);
    lowered_.emplace(std::move(key), step);
    return step;
}

const SimulationCache::MeshAxes& SimulationCache::mesh_axes(const hardware::TopologySpec& topology,
                                                            const hardware::SliceShape& slice,
                                                            const network::MeshSpec& mesh) {
    if (!mesh_axes_ || !(mesh_axes_->slice == slice) || !(mesh_axes_->mesh == mesh) ||
        !(mesh_axes_->topology == topology))
        mesh_axes_ = MeshAxesEntry{topology, slice, mesh, network::map_mesh_axes(topology, slice, mesh)};
    return mesh_axes_->axes;
}

PartitionedStep SimulationCache::partition(const parallel::PartitionInput& input,
                                           const std::shared_ptr<const workload::OpGraph>& graph) {
    PODSIM_ASSERT(graph.get() == &input.graph, "partition input of another graph");
    workload::TrainingSpec training = input.training;
    training.global_batch = 0;
    for (PartitionEntry& e : partitions_) {
        if (!e.graph || e.graph != graph || !(e.runtime == input.runtime) || !(e.training == training) ||
            !(e.mesh == input.mesh) || !(e.placement == input.ici_axes) ||
            e.split_k_multiprocessors != input.split_k_multiprocessors)
            continue;
        PartitionedStep step{e.resizable.program, &e.dependencies, &e.network};
        if (e.global_batch != input.training.global_batch)
            parallel::resize(step.program, e.resizable.sizing, input);
        return step;
    }
    parallel::ResizableProgram resizable = parallel::partition_resizable(input);
    if (resizable.program.ops.size() > kMaxPartitionOps) return {std::move(resizable.program), nullptr};
    if (partitions_.empty()) partitions_.resize(kMaxPartitions);
    PartitionEntry& e = partitions_[next_partition_];
    next_partition_ = (next_partition_ + 1) % partitions_.size();
    // Copies assigned into the entry's storage; the config takes the partitioner's own.
    e.graph = graph;
    e.training = training;
    e.mesh = input.mesh;
    e.placement = input.ici_axes;
    e.runtime = input.runtime;
    e.split_k_multiprocessors = input.split_k_multiprocessors;
    e.global_batch = input.training.global_batch;
    e.resizable.program = resizable.program;
    e.resizable.sizing = resizable.sizing;
    e.dependencies = scheduler::dependencies(resizable.program, input.runtime);
    e.network.valid = false;
    return {std::move(resizable.program), &e.dependencies, &e.network};
}

std::shared_ptr<const network::Torus> SimulationCache::torus(const hardware::TopologySpec& topology,
                                                             const hardware::SliceShape& slice,
                                                             bool twisted) {
    for (const auto& e : tori_) {
        if (e.twisted == twisted && e.slice == slice && e.ici == topology.ici &&
            e.devices_per_chip == topology.chip.devices_per_chip &&
            e.intra_chip_bandwidth == topology.chip.intra_chip_bandwidth)
            return e.torus;
    }
    if (tori_.size() >= kMaxTori) {
        tori_.clear();
        plans_.clear();  // keyed by torus address
        ++plan_generation_;
        bandwidths_.clear();
        if (scratch_) scratch_->rates.clear();  // names their flows and bandwidth vectors
    }
    auto t = std::make_shared<const network::Torus>(topology, slice, twisted);
    tori_.push_back({topology.ici, topology.chip.devices_per_chip, topology.chip.intra_chip_bandwidth, slice,
                     twisted, t});
    return t;
}

const std::vector<double>& SimulationCache::link_bandwidth(const std::shared_ptr<const network::Torus>& torus,
                                                           double link_efficiency) {
    for (const auto& e : bandwidths_)
        if (e.torus == torus.get() && e.link_efficiency == link_efficiency) return e.link_bandwidth;
    bandwidths_.push_back(
        {torus.get(), link_efficiency, network::effective_link_bandwidth(*torus, link_efficiency)});
    return bandwidths_.back().link_bandwidth;
}

network::FlowNetwork::Scratch& SimulationCache::scratch(std::size_t links) {
    if (!scratch_ || scratch_->capacity.size() < links) {
        scratch_ = std::make_unique<network::FlowNetwork::Scratch>(links);
        // Rates solved for one config serve the next ones: the memo names flows of cached plans and
        // cached bandwidth vectors, and is cleared whenever those may go (above and in plan()).
        scratch_->keep_rates = true;
    }
    // A full memo remembers nothing new: start again, so that later configs' sets are kept.
    if (scratch_->rates.full()) scratch_->rates.clear();
    return *scratch_;
}

std::shared_ptr<const CachedPlan> SimulationCache::plan(const std::shared_ptr<const network::Torus>& torus,
                                                        collectives::CollectiveKind kind, double bytes,
                                                        const std::vector<network::AxisDimPart>& parts,
                                                        double hop_latency, double launch_overhead,
                                                        double link_efficiency, bool link_bytes) {
    const PlanQuery query{torus.get(),     static_cast<int>(kind), bytes,      hop_latency,
                          launch_overhead, link_efficiency,        link_bytes, parts};
    auto it = plans_.find(query);
    if (it != plans_.end()) return it->second;
    if (plans_.size() >= kMaxPlans || path_ids_.size() >= kMaxPaths) {
        plans_.clear();
        ++plan_generation_;
        path_ids_.clear();
        if (scratch_) scratch_->rates.clear();  // names the plans' flows and paths
    }
    auto entry = std::make_shared<CachedPlan>();
    entry->plan = collectives::plan_collective(*torus, kind, bytes, parts, hop_latency, launch_overhead);
    // Plans that differ only in bytes have flows on the same paths, whose rates are the same.
    for (auto& phase : entry->plan.phases) {
        for (auto& flow : phase.flows) {
            const auto next_id = static_cast<std::uint32_t>(path_ids_.size() + 1);
            flow.path_id = path_ids_.try_emplace(flow.links, next_id).first->second;
        }
    }
    const std::vector<double>& bandwidth = link_bandwidth(torus, link_efficiency);
    entry->alone = scheduler::run_alone(entry->plan.phases, bandwidth, scratch(bandwidth.size()), link_bytes);
    std::shared_ptr<const CachedPlan> shared = std::move(entry);
    plans_.emplace(PlanKey{torus.get(), static_cast<int>(kind), bytes, hop_latency, launch_overhead,
                           link_efficiency, link_bytes, parts},
                   shared);
    return shared;
}

}  // namespace podsim::run
