#pragma once

#include <cstddef>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/sweep_file.hpp"
#include "report/run_report.hpp"

namespace podsim::sweep {

// One configuration of a sweep, as written to results.csv / results.jsonl: its report fields are
// the sweep columns of the report registry (report::sweep_fields(), `podsim explain sweep`).
struct Row {
    std::size_t index = 0;
    bool ok = false;                  // simulated (false: skipped, with a reason)
    std::string reason;               // why it was skipped
    std::vector<std::string> values;  // swept parameters, flow YAML
    // By position in report::sweep_fields(); empty when skipped. NaN: unknown, or a text field.
    std::vector<double> numbers;
    std::vector<std::string> texts;  // text fields by the same position; "" for the others
    bool kept = false;               // passed every keep filter

    // A report field by its column or report path ("mfu", "memory.peak_bytes"); NaN (or "") when
    // the row has no such field.
    double number(std::string_view field) const;
    std::string text(std::string_view field) const;
    // By position in report::sweep_fields(), for loops that look a field up once.
    double number(std::size_t column) const { return column < numbers.size() ? numbers[column] : kNaN; }
    bool flag(std::size_t column) const { return number(column) == 1.0; }

    // Marks the row simulated and takes the sweep columns of its report.
    void set_report(const report::RunReport& report);

    static constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
};

// Positions of the columns the sweep itself reads (ranking, Pareto front, summary).
struct Columns {
    std::size_t step_time_s, mfu, hfu, peak_bytes, fits;
};
const Columns& columns();

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
