#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/sweep_file.hpp"

namespace podsim::sweep {

// One configuration of a sweep, as written to results.csv / results.jsonl.
struct Row {
    std::size_t index = 0;
    bool ok = false;                  // simulated (false: skipped, with a reason)
    std::string reason;               // why it was skipped
    std::vector<std::string> values;  // swept parameters, flow YAML
    std::string name;
    double chips = 0, step_time_s = 0, mfu = 0, hfu = 0, tokens_per_s = 0, peak_bytes = 0, capacity_bytes = 0;
    double exposed_communication_s = 0, compute_s = 0, host_peak_bytes = 0, compile_time_s = 0;
    bool fits = false, host_fits = true;
    bool kept = false;  // passed every keep filter
};

// Report fields a keep expression or sort key may name.
const std::vector<std::string>& row_fields();
std::optional<double> row_field(const Row& row, const std::string& name);

struct SweepOptions {
    int jobs = 0;           // 0 = hardware threads
    std::string out_dir;    // results.csv and results.jsonl; empty = none
    bool resume = false;    // skip configs already in out_dir
    int shard_index = 1;    // this is shard K (1-based) ...
    int shard_count = 1;    // ... of N: configs with index % N == K - 1
    std::size_t top = 10;   // rows of the ranked table
    bool progress = true;   // progress on stderr
    std::size_t limit = 0;  // stop after this many new configs (0 = all); for tests of interruption
    bool exact = false;     // simulate every config with run::SimulateOptions::exact (the oracle)
    // Called with every row of this run (not resumed ones), in index order, on the calling thread.
    std::function<void(const Row&)> on_row;
};

struct SweepSummary {
    std::size_t total = 0;      // configs in this shard
    std::size_t evaluated = 0;  // simulated (this run and earlier ones when resuming)
    std::size_t resumed = 0;    // taken from an earlier run
    std::size_t not_fitting = 0;
    std::size_t kept = 0;
    std::map<std::string, std::size_t> skipped;  // reason -> count
    std::vector<Row> ranked;                     // best first, kept rows only
    std::vector<Row> pareto;                     // step time vs peak HBM among rows that fit
    double seconds = 0.0;
    double configs_per_second = 0.0;  // new configs of this run
    std::vector<std::string> parameter_names;
    std::string sort_key;
};

// Runs (or resumes) a sweep. Keep filters and the sort key are checked first: a bad one is a
// core::UserError at its FILE:LINE:COL. Results stream to out_dir in index order as they finish.
SweepSummary run_sweep(const config::SweepPlan& plan, const SweepOptions& options);

// Joins shard directories into `out_dir` (rows by index); returns the summary over all of them.
// Each --out directory records which shard it holds (shard.txt); merging refuses a partial or
// doubled set with a core::UserError listing the missing and duplicate shards and the configs with
// no row, unless `allow_partial`, when those problems are returned in `problems` instead.
SweepSummary merge_shards(const config::SweepPlan& plan, const std::vector<std::string>& shard_dirs,
                          const std::string& out_dir, bool allow_partial = false,
                          std::vector<std::string>* problems = nullptr);

// The tables a person reads at the end: ranked configs, Pareto front, what did not fit and why.
std::string format_summary(const SweepSummary& summary);

}  // namespace podsim::sweep
