#pragma once

#include <map>
#include <string>
#include <utility>
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

// Steps whose records and activities a whole run keeps (every step of a shorter run): the trace
// and per-step figures cover them; totals, counts and the steady state cover the whole run, so
// that its memory does not grow with its length.
inline constexpr long kRecordedSteps = 10'000;

struct Activity {
    Track track = Track::host;
    std::string name;  // trace, hash, compile, cache_load, post_order, fetch, dispatch, launch, ...
    long step = 0;     // 0-based index over the run (train and eval steps in the order they run)
    int program = -1;  // index into WholeRun::programs for device executions and compiles
    core::Time start = 0;
    core::Time end = 0;
};

struct StepRecord {
    long index = 0;
    bool eval = false;
    std::string program;  // name of its (last) program
    bool compiled = false;
    core::Time end = 0;       // its last execution ended (or its last sync)
    double duration_s = 0.0;  // since the previous step ended
    // Process-wide counts up to and including this step, as PyTorch/XLA's metrics count them.
    long compiles_so_far = 0;
    long from_device_so_far = 0;
};

// Process-wide counts up to and including one step (any step of the run, recorded or not).
struct StepCounts {
    long index = 0;
    long compiles = 0;
    long from_device = 0;
};

// A PyTorch/XLA-style metric: how many samples, their total.
struct Metric {
    long count = 0;
    double total_s = 0.0;
};

// The order of a run's steps and what each syncs to the host, from the plan alone: train steps
// with an evaluation of `eval_steps` every `eval_every` of them (or one after training), a
// loss.item() every `log_every` train steps, a transfer each way around every op without a
// lowering, and `host_transfers_per_eval_step` results to the host per evaluation step.
struct StepPattern {
    long train_steps = 0;
    long eval_every = 0;
    long eval_steps = 0;  // per evaluation
    long log_every = 0;
    long unlowered_ops = 0;
    long host_transfers_per_eval_step = 0;

    static StepPattern of(const RunPlan& plan);
    long evaluations() const;
    long total_steps() const { return train_steps + evaluations() * eval_steps; }
    // Train and eval steps among steps 0..step.
    std::pair<long, long> phase_counts(long step) const;
    // Device-to-host transfers (TransferFromServerTime samples) in steps 0..step.
    long from_device_through(long step) const;
};

struct WholeRun {
    std::string name;
    std::string framework;
    std::string host_model;      // "graph size" or "constant (runtime.host_overhead)"
    std::string overlap;         // PyTorch/XLA
    double single_step_s = 0.0;  // the step as `podsim run` reports it (seq_len and batch of the config)
    double run_time_s = 0.0;
    long train_steps = 0;
    long eval_steps = 0;
    double train_time_s = 0.0;
    double eval_time_s = 0.0;
    long steady_window = 0;            // train steps averaged: the plan's, at most half of them
    double steady_train_step_s = 0.0;  // mean of the last steady_window train steps
    double steady_eval_step_s = 0.0;
    double warmup_loss_s = 0.0;  // train time above train steps x steady step
    // Gap between the end of one device execution and the start of the next (steady window).
    double steady_gap_s = 0.0;
    double mean_gap_s = 0.0;
    std::map<std::string, Metric> metrics;  // CompileTime, ExecuteTime, TransferFromServerTime, ...
    std::map<std::string, long> counters;   // MarkStep, CachedCompile, UncachedCompile
    std::vector<Program> programs;          // distinct, in order of first use
    // PT_XLA_DEBUG=1's lines (pt-xla-profiler: ...): those of the recorded steps, how many the whole
    // run prints, and its last ones (up to 3).
    std::vector<std::string> debug_lines;
    long debug_line_count = 0;
    std::vector<std::string> last_debug_lines;
    std::vector<StepRecord> steps;     // the first kRecordedSteps steps
    std::vector<Activity> activities;  // of those steps
    long simulated_steps = 0;          // steps simulated one by one (the rest repeated a period)
    StepPattern pattern;
    std::vector<std::pair<long, long>> compile_steps;  // (step, compilations through it) where it grew

    long total_steps() const { return train_steps + eval_steps; }
    // Counts through `step` (0-based, clamped to the run).
    StepCounts counts_at(long step) const;
    // What PT_XLA_DEBUG=1 prints after `step` (torch_xla runtime/metrics_analysis.cpp).
    std::vector<std::string> debug_lines_at(long step) const;
};

struct WholeRunOptions {
    // Add up stretches of identical steps in closed form once they repeat exactly; false runs every
    // step (the same results, for tests).
    bool jump_periods = true;
};

// Runs `plan` over the step `spec` describes: each distinct program simulated once
// (run::simulate), composed with host work on the tracks above. Deterministic: the same inputs
// give the same result (sequence lengths come from plan.seed). Memory does not grow with the
// number of steps, and a stretch of identical steps in a periodic steady state is added up in
// closed form (docs/whole-run.md). A run longer than simulated time can represent, or with too
// many distinct programs, is a core::UserError located at the whole_run block.
WholeRun simulate_whole_run(const run::RunSpec& spec, const RunPlan& plan, WholeRunOptions options = {});

// The overlap setting in effect: the plan's, or the current releases' default (both overlapped).
Overlap effective_overlap(const RunPlan& plan);

}  // namespace podsim::training_run
