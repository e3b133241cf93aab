#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <memory>
#include <optional>

#include "collectives/comm_plan.hpp"
#include "cost/cost_model.hpp"
#include "memory/host_memory.hpp"
#include "memory/memory_profile.hpp"
#include "network/axis_mapping.hpp"
#include "network/torus.hpp"
#include "parallel/device_program.hpp"
#include "parallel/sharding_errors.hpp"
#include "report/run_report.hpp"
#include "run/run_spec.hpp"
#include "run/simulation_cache.hpp"
#include "scheduler/timeline.hpp"
#include "workload/model_spec.hpp"
#include "workload/op_graph.hpp"
#include "workload/training_spec.hpp"

namespace podsim::run {

// Every stage's output, so that each can be dumped and tested on its own.
struct Simulation {
    std::shared_ptr<const workload::OpGraph> graph;  // the unsharded step, before partitioning
    std::vector<network::AxisMapping> mapping;
    std::shared_ptr<const network::Torus> torus;           // null for a single chip
    std::vector<std::shared_ptr<const CachedPlan>> plans;  // distinct ICI collective plans
    std::vector<int> plan_of_op;                           // index into plans, or -1
    parallel::DeviceProgram program;
    std::vector<cost::OpCost> costs;
    scheduler::Timeline timeline;
    memory::MemoryProfile memory;
    memory::HostMemory host_memory;
    report::RunReport report;
    // Layers of the cut model that was simulated when folded (SimulateOptions::fold), else 0, and
    // its microbatches when they were folded too, else 0.
    int folded_layers = 0;
    int folded_microbatches = 0;
};

// Runs the whole pipeline on a validated spec. Pure: no I/O, no global state, safe to call from
// many threads at once. A spec that config loading accepted never fails here; a mesh that cannot
// be placed (only reachable by building specs by hand) throws core::UserError.
Simulation simulate(const RunSpec& spec);

struct SimulateOptions {
    // Replay every collective's flows on the flow network, even those that run alone on their links
    // (the oracle the fast paths are tested against; see docs/model.md, "Simulating fast").
    bool exact = false;
    // Fill timeline.link_bytes (scheduler::ScheduleOptions::count_link_bytes).
    bool link_bytes = false;
    // Simulate a model cut to a few layers and splice the repeated periods into the report
    // (docs/model.md, "Folding layers"): the same report, but `program`, `costs`, `timeline` and the
    // memory samples are of the cut model (Simulation::folded_layers), so callers that dump or trace
    // them leave it off. Never with `exact`.
    bool fold = false;
};

// The same sharing what configs have in common through `cache` (one per thread): sweeps lower each
// distinct model and training setup once, and plan each distinct collective once.
Simulation simulate(const RunSpec& spec, SimulationCache& cache, SimulateOptions options = {});

// Where a program's collectives run: the slice of the topology, at the calibration's link
// efficiency and hop latency.
struct NetworkPlace {
    const hardware::TopologySpec& topology;
    const hardware::SliceShape& slice;
    bool twisted_torus = false;
    const cost::Calibration& calibration;
};

// Lowers every ICI collective of `sim.program` onto the torus links (filling sim.torus, sim.plans and
// sim.plan_of_op): the scheduler's network input, empty when the program has no ICI collective.
// `memo`: the network plan of the program's kept partitioned step (PartitionedStep::network), read
// and updated; the result is the same with or without it.
scheduler::NetworkInput plan_network(const NetworkPlace& place, Simulation& sim, SimulationCache& cache,
                                     const SimulateOptions& options, NetworkMemo* memo = nullptr);

// A per-device program from another source than a run spec (an imported XLA module),
// and what simulating it needs: where it runs, how, and what the report says about it.
struct ProgramSpec {
    std::string name;    // the report's name
    std::string source;  // the file it came from, for messages
    hardware::TopologySpec topology;
    hardware::SliceShape slice;
    bool twisted_torus = false;
    parallel::RuntimeSpec runtime;
    cost::Calibration calibration = cost::Calibration::defaults();
    core::DType compute_dtype = core::DType::bf16;
    network::MeshSpec mesh;  // the devices the program runs on, as the report names them
    // The model for MFU and the report's model fields: a podsim model with its training setup
    // (tokens per step), or none.
    std::optional<workload::ModelSpec> model;
    std::optional<workload::TrainingSpec> training;
    bool mfu_attention = false;
    // Model FLOPs per step when given directly (0: from `model`, or none).
    double model_flops_per_step = 0.0;
    // Kernels of the program as compiled (a loop's body once): what compile time scales with.
    long compiled_ops = 0;
};

// A program from another source, simulated as a lowered one is from the program on: costs,
// collective plans, schedule, memory and report. Memory comes from the program's own buffers
// (memory::profile_buffers) when it lists them, else from profile_memory. Pure, like the spec's
// simulate(); throws core::UserError when one step would not fit podsim's time.
Simulation simulate(parallel::DeviceProgram program, const ProgramSpec& spec, SimulationCache& cache,
                    SimulateOptions options = {});

using SemanticError = parallel::ShardingError;

// parallel::sharding_errors of the spec's parts (config loading reports them; see there).
std::vector<SemanticError> semantic_errors(const RunSpec& spec);

}  // namespace podsim::run
