#pragma once

// podsim's public C++ API: load and check run configs, simulate a training step, time a collective,
// run a sweep, explain the schemas. One header over the modules; link podsim::podsim.
//
// Nothing here prints or exits. Mistakes in user input throw podsim::ConfigError, which lists every
// one of them as `FILE:LINE:COL: error: key.path: message` (e.diagnostics()); a bug in podsim throws
// podsim::InternalError. Everything is a pure function of its arguments: no global state, and any
// number of threads may call it at once.

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/overrides.hpp"
#include "config/sweep_file.hpp"
#include "core/assert.hpp"
#include "core/diagnostics.hpp"
#include "profile/suite.hpp"
#include "report/report_fields.hpp"
#include "report/run_report.hpp"
#include "run/collective_run.hpp"
#include "run/module_run.hpp"
#include "run/run_spec.hpp"
#include "run/simulate.hpp"
#include "sweep/shard.hpp"
#include "sweep/sweep_runner.hpp"
#include "training_run/whole_run.hpp"

namespace podsim {

using ConfigError = core::UserError;
using InternalError = core::InternalError;
using Diagnostic = core::Diagnostic;

using RunSpec = run::RunSpec;
using Simulation = run::Simulation;
using SimulateOptions = run::SimulateOptions;
using RunReport = report::RunReport;
// The report's fields (name, unit, meaning, type, accessor): report::report_fields(), and the
// columns of sweep rows, report::sweep_fields().
using ReportField = report::ReportField;
using Override = config::Override;

// ------------------------------------------------------------------ loading and checking

// `key.path=value`, as `podsim run --set` takes it (e.g. training.global_batch=256, mesh={fsdp: 8}).
Override parse_override(const std::string& assignment);

// A run config file (schema podsim.run/v1, or a published case's `run:` block) with overrides
// applied first. Loading checks everything `podsim check` checks.
RunSpec load_run(const std::string& path, const std::vector<Override>& overrides = {});

// A run config as YAML (or JSON) text. `name` is what messages call it; `model:`, `topology:` and
// `calibration:` paths resolve against `base_dir` (default: the current directory).
RunSpec load_run_text(const std::string& yaml_text, const std::vector<Override>& overrides = {},
                      const std::string& name = "<text>", const std::filesystem::path& base_dir = {});

// configs/default.yaml of the first data directory config::data_roots finds (PODSIM_HOME, the install).
std::optional<std::filesystem::path> default_config_path();

// ------------------------------------------------------------------ simulating

// One training step of `spec`: every pipeline stage's output, the report among them. With
// `options.exact` every collective's flows are replayed (the oracle of the fast paths).
Simulation simulate(const RunSpec& spec, SimulateOptions options = {});

// The report as `podsim run --format json` writes it (schema podsim.report/v1) and as the table.
std::string report_json(const RunReport& report);
std::string report_table(const RunReport& report);
// Chrome trace (Perfetto) of the simulated step, as `podsim run --trace` writes it.
std::string chrome_trace(const RunSpec& spec, const Simulation& simulation);

// ------------------------------------------------------------------ compiled XLA modules

// `podsim run MODULE --topology T --slice S`: a compiled XLA module (HLO text or HloProto, gzipped or
// not) lowered to its per-device program and simulated on the slice (docs/hlo-import.md).
using ModuleRunRequest = run::ModuleRunRequest;
using ModuleRun = run::ModuleRun;
ModuleRun run_module(const ModuleRunRequest& request, SimulateOptions options = {});
// Whether a file is a compiled XLA module, by its content.
bool is_module_file(const std::string& path);
// Chrome trace (Perfetto) of a simulated module: one span per HLO instruction run.
std::string module_trace(const ModuleRun& run);

// ------------------------------------------------------------------ whole runs

using WholeRun = training_run::WholeRun;
// The run of many steps a config's whole_run: block describes (ConfigError without one).
WholeRun simulate_whole_run(const RunSpec& spec);
// As `podsim run --format json` writes it for such a config (schema podsim.whole-run/v1), and the
// Chrome trace `podsim run --trace` writes.
std::string whole_run_json(const WholeRun& run);
std::string whole_run_trace(const WholeRun& run);

// ------------------------------------------------------------------ collectives

// What `podsim collective` takes, as text.
struct CollectiveQuery {
    std::string topology = "tpu-v4";  // name or file
    std::string slice;                // e.g. 4x4x4
    std::string mesh;                 // e.g. fsdp=16,tensor=4; empty: one axis "all" over every chip
    std::string op = "all-gather";  // all-gather, reduce-scatter, all-reduce, all-to-all, collective-permute
    std::string axis;               // mesh axis, or several comma-separated; empty: the first
    std::string bytes = "64MiB";    // the full array, as the scaling book counts it
    bool twisted = false;           // the twisted torus where the shape allows it
};
using CollectiveRequest = run::CollectiveRequest;
using CollectiveResult = run::CollectiveResult;

// Checks the query and resolves names; mistakes are ConfigError located at "podsim collective".
CollectiveRequest collective_request(const CollectiveQuery& query);
CollectiveResult run_collective(const CollectiveRequest& request);
// One JSON object: op, bytes, group_size, time_s, closed_form_s, bandwidths, phases, links.
std::string collective_json(const CollectiveRequest& request, const CollectiveResult& result);

// ------------------------------------------------------------------ sweeps

using SweepPlan = config::SweepPlan;
using SweepOptions = sweep::SweepOptions;
using SweepRow = sweep::Row;
using SweepSummary = sweep::SweepSummary;

// A sweep file (schema podsim.sweep/v1), or one given as text (its `base:` path resolves against
// `base_dir`, default the current directory).
SweepPlan load_sweep(const std::string& path);
SweepPlan load_sweep_text(const std::string& yaml_text, const std::string& name = "<text>",
                          const std::filesystem::path& base_dir = {});

// Runs the sweep on options.jobs threads (writing options.out_dir when set); `on_row` sees every row
// (simulated or skipped, with its swept values and report fields) in index order, on the calling
// thread. Returns the ranked summary.
SweepSummary run_sweep(const SweepPlan& plan, SweepOptions options,
                       const std::function<void(const SweepRow&)>& on_row = {});

// ------------------------------------------------------------------ validation

using ValidationResult = profile::CaseResult;

// Every published case of a podsim.validation/v1 directory, and of its collectives/ subdirectory
// when there is one (`podsim validate --suite DIR`); validation_json is its `--format json`.
std::vector<ValidationResult> validate_suite(const std::string& directory);
std::string validation_json(const std::vector<ValidationResult>& results);

// ------------------------------------------------------------------ documentation

// `podsim explain WHAT`: every key of a schema with type, unit, default and help; "report" and
// "sweep": every field of the report and of a sweep row with type, unit and meaning.
std::string explain(std::string_view what);
std::vector<std::string> explainable();

}  // namespace podsim
