#pragma once

#include <map>
#include <string>
#include <vector>

#include "core/time.hpp"
#include "run/run_spec.hpp"
#include "training_run/program.hpp"
#include "training_run/run_plan.hpp"

namespace podsim::training_run {

// The tracks of the whole-run simulation: the host's main thread (tracing, hashing, compiling,
// RunPostOrder, FetchTensorData, dispatch, waiting at syncs), the input loader, the runtime's
// execution thread, the device, and the two directions of host<->device transfers.
enum class Track { host, loader, runtime, device, to_device, from_device };
inline constexpr int kTracks = 6;
std::string_view track_name(Track track);

struct Activity {
    Track track = Track::host;
    std::string name;  // trace, hash, compile, cache_load, post_order, fetch, dispatch, launch, ...
    int step = 0;      // 0-based index over the run (train and eval steps in the order they run)
    int program = -1;  // index into WholeRun::programs for device executions and compiles
    core::Time start = 0;
    core::Time end = 0;
};

struct StepRecord {
    int index = 0;
    bool eval = false;
    std::string program;  // name of its (last) program
    bool compiled = false;
    core::Time end = 0;       // its last execution ended (or its last sync)
    double duration_s = 0.0;  // since the previous step ended
    // Process-wide counts up to and including this step, as PyTorch/XLA's metrics count them.
    long compiles_so_far = 0;
    long from_device_so_far = 0;
};

// A PyTorch/XLA-style metric: how many samples, their total.
struct Metric {
    long count = 0;
    double total_s = 0.0;
};

struct WholeRun {
    std::string name;
    std::string framework;
    std::string host_model;      // "graph size" or "constant (runtime.host_overhead)"
    std::string overlap;         // PyTorch/XLA
    double single_step_s = 0.0;  // the step as `podsim run` reports it (seq_len and batch of the config)
    double run_time_s = 0.0;
    int train_steps = 0;
    int eval_steps = 0;
    double train_time_s = 0.0;
    double eval_time_s = 0.0;
    double steady_train_step_s = 0.0;  // mean of the last steady_window train steps
    double steady_eval_step_s = 0.0;
    double warmup_loss_s = 0.0;  // train time above train steps x steady step
    // Gap between the end of one device execution and the start of the next (steady window).
    double steady_gap_s = 0.0;
    double mean_gap_s = 0.0;
    std::map<std::string, Metric> metrics;  // CompileTime, ExecuteTime, TransferFromServerTime, ...
    std::map<std::string, long> counters;   // MarkStep, CachedCompile, UncachedCompile
    std::vector<std::string> debug_lines;   // pt-xla-profiler: ... as PT_XLA_DEBUG=1 prints them
    std::vector<Program> programs;          // distinct, in order of first use
    std::vector<StepRecord> steps;
    std::vector<Activity> activities;
    std::uint64_t events = 0;
};

// Runs `plan` over the step `spec` describes: each distinct program simulated once
// (run::simulate), composed with host work in a discrete-event simulation on core::Engine.
// Deterministic: the same inputs give the same result (sequence lengths come from plan.seed).
WholeRun simulate_whole_run(const run::RunSpec& spec, const RunPlan& plan);

// The overlap setting in effect: the plan's, or the current releases' default (both overlapped).
Overlap effective_overlap(const RunPlan& plan);

}  // namespace podsim::training_run
