#include "cli/commands.hpp"

#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "core/diagnostics.hpp"
#include "core/quantity.hpp"
#include "podsim/podsim.hpp"
#include "report/format.hpp"
#include "run/dumps.hpp"
#include "training_run/whole_run.hpp"
#include "training_run/whole_run_format.hpp"

namespace podsim::cli {
namespace {

struct RunOptions {
    std::string config, format = "table", trace_path, dump, metrics_path;
    std::vector<std::string> sets;
    bool exact = false;
};

// A config with a whole_run: block: the step as usual, then the run of many steps.
int command_whole_run(const RunOptions& o, const run::RunSpec& spec, const run::Simulation& sim) {
    training_run::WholeRun whole = training_run::simulate_whole_run(spec, *spec.whole_run);
    if (o.format == "json") {
        std::cout << training_run::whole_run_json(whole);
    } else {
        std::cout << report::format_table(sim.report) << "\n" << training_run::format_whole_run(whole);
    }
    if (!o.trace_path.empty()) {
        write_file(o.trace_path, training_run::whole_run_trace(whole));
        if (o.format != "json") std::cout << fmt::format("\ntrace written to {}\n", o.trace_path);
    }
    if (!o.metrics_path.empty()) {
        write_file(o.metrics_path, training_run::metrics_report(whole));
        if (o.format != "json") std::cout << fmt::format("metrics report written to {}\n", o.metrics_path);
    }
    return 0;
}

int command_run(const RunOptions& o) {
    const std::string& format = o.format;
    const std::string& trace_path = o.trace_path;
    const std::string& dump = o.dump;
    run::RunSpec spec = load_config(o.config, o.sets);
    if (!o.metrics_path.empty() && !spec.whole_run)
        option_error("podsim run", "--metrics-report",
                     "needs a config with a whole_run: block (the metrics of a run of many steps)");
    if (!o.metrics_path.empty() && !dump.empty())
        option_error("podsim run", "--metrics-report",
                     "is written with the whole run's report, not with --dump");
    // The folded simulation gives the same report from a cut model: only what dumps or traces the
    // step's own program and timeline needs the whole one.
    const bool fold = !o.exact && dump.empty() && (trace_path.empty() || spec.whole_run.has_value());
    run::Simulation sim = podsim::simulate(spec, run::SimulateOptions{.exact = o.exact, .fold = fold});
    if (spec.whole_run && dump.empty()) return command_whole_run(o, spec, sim);
    if (!dump.empty()) {
        std::cout << run::dump_stage(spec, sim, dump);
    } else if (format == "json") {
        std::cout << podsim::report_json(sim.report);
    } else {
        std::cout << podsim::report_table(sim.report);
    }
    if (!trace_path.empty()) {
        write_file(trace_path, podsim::chrome_trace(spec, sim));
        if (format != "json" && dump.empty()) std::cout << fmt::format("\ntrace written to {}\n", trace_path);
    }
    return 0;
}

}  // namespace

Command add_run_command(CLI::App& app) {
    auto o = std::make_shared<RunOptions>();
    auto* cmd =
        app.add_subcommand("run", "simulate one step of a run config (default: configs/default.yaml)");
    cmd->add_option("config", o->config, "run config (podsim.run/v1); - reads it from standard input");
    add_set_option(cmd, o->sets);
    cmd->add_flag("--exact", o->exact,
                  "replay every collective's flows instead of reusing runs alone (same results, slower)");
    cmd->add_option("--format", o->format, "table or json")->check(CLI::IsMember({"table", "json"}));
    cmd->add_option(
        "--trace", o->trace_path,
        "write a Chrome trace (Perfetto) of the predicted step (of the whole run with whole_run:)");
    cmd->add_option("--metrics-report", o->metrics_path,
                    "with whole_run: write the run's counters as torch_xla's metrics_report() lays them out");
    cmd->add_option("--dump", o->dump,
                    "print one stage instead of the report: opgraph, mapping, program, timeline")
        ->check(CLI::IsMember({"opgraph", "mapping", "program", "timeline"}));
    return {cmd, [o] { return command_run(*o); }};
}

}  // namespace podsim::cli
