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
#include "run/module_run.hpp"
#include "training_run/whole_run.hpp"
#include "training_run/whole_run_format.hpp"

namespace podsim::cli {
namespace {

struct RunOptions {
    std::string config, format = "table", trace_path, dump, metrics_path;
    std::vector<std::string> sets;
    bool exact = false;
    // A compiled XLA module instead of a run config (run::ModuleRunRequest).
    std::string topology, slice, device_order, model, calibration;
    long global_batch = 0, seq_len = 0;
    double model_flops = 0.0;
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

// The lines a table report of a module adds: what was read, where it runs, what was assumed.
std::string module_summary(const run::ModuleRun& m) {
    std::string out = fmt::format("\nmodule {} ({}, {} devices, placed by {})\n", m.module_name, m.format,
                                  m.lowered.devices, m.lowered.placement);
    if (m.memory_source == "liveness") {
        out += "  memory: podsim's liveness of the module's buffers\n";
    } else {
        out += fmt::format("  memory: XLA's {} (podsim's own liveness: {})\n", m.memory_source,
                           core::format_bytes(m.liveness_peak_bytes));
    }
    if (!m.calibration_file.empty()) out += fmt::format("  calibration: {}\n", m.calibration_file);
    for (const auto& note : m.lowered.notes) out += fmt::format("  note: {}\n", note);
    return out;
}

int command_run_module(const RunOptions& o) {
    if (!o.sets.empty() || !o.metrics_path.empty())
        option_error("podsim run", o.sets.empty() ? "--metrics-report" : "--set",
                     "applies to run configs, not to a compiled module");
    if (o.dump == "opgraph" || o.dump == "mapping")
        option_error("podsim run", "--dump",
                     fmt::format("{} is a stage of run configs; a module has program "
                                 "and timeline",
                                 o.dump));
    run::ModuleRunRequest request;
    request.path = o.config;
    if (!o.topology.empty()) request.topology = o.topology;
    if (!o.slice.empty()) request.slice = o.slice;
    request.device_order = o.device_order;
    request.model = o.model;
    request.global_batch = o.global_batch;
    request.seq_len = o.seq_len;
    request.model_flops = o.model_flops;
    request.calibration = o.calibration;
    run::ModuleRun m = run::run_module(request, run::SimulateOptions{.exact = o.exact});
    const run::Simulation& sim = m.simulation;
    if (o.dump == "program") {
        std::cout << dump_program(sim);
    } else if (o.dump == "timeline") {
        std::cout << dump_timeline(sim);
    } else if (o.format == "json") {
        std::cout << podsim::report_json(sim.report);
    } else {
        std::cout << podsim::report_table(sim.report) << module_summary(m);
    }
    if (!o.trace_path.empty()) {
        open_output(o.trace_path) << report::chrome_trace(sim.report.name, sim.program, sim.timeline,
                                                          sim.memory);
        if (o.format != "json" && o.dump.empty())
            std::cout << fmt::format("\ntrace written to {}\n", o.trace_path);
    }
    return 0;
}

int command_run(const RunOptions& o) {
    if (!o.config.empty() && o.config != "-" && run::is_module_file(o.config)) return command_run_module(o);
    const std::pair<bool, const char*> module_options[] = {
        {!o.topology.empty(), "--topology"},         {!o.slice.empty(), "--slice"},
        {!o.device_order.empty(), "--device-order"}, {!o.model.empty(), "--model"},
        {o.global_batch != 0, "--global-batch"},     {o.seq_len != 0, "--seq-len"},
        {o.model_flops != 0.0, "--model-flops"},     {!o.calibration.empty(), "--calibration"}};
    for (const auto& [given, option] : module_options) {
        if (given)
            option_error("podsim run", option,
                         "applies to a compiled XLA module; a run config sets it in its own keys (--set)");
    }
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
        app.add_subcommand("run",
                           "simulate one step of a run config (default: configs/default.yaml) or of a "
                           "compiled XLA module");
    cmd->add_option("config", o->config,
                    "run config (podsim.run/v1), - to read it from standard input, or a compiled XLA module "
                    "(HLO text or HloProto, gzipped or not)");
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
    // A compiled XLA module (HLO text or HloProto, recognised by content) in place of the config.
    cmd->add_option("--topology", o->topology, "module: topology name or file (default tpu-v4)");
    cmd->add_option("--slice", o->slice, "module: slice shape, e.g. 1, 2x2x4 (default 1)");
    cmd->add_option(
        "--device-order", o->device_order,
        "module: how its device ids sit on the slice: mesh, devices, or a list of device indices");
    cmd->add_option("--model", o->model, "module: podsim model (name or file) whose 6N FLOPs give MFU");
    cmd->add_option("--global-batch", o->global_batch, "module: sequences per step, with --model");
    cmd->add_option("--seq-len", o->seq_len, "module: sequence length, with --model");
    cmd->add_option("--model-flops", o->model_flops, "module: model FLOPs per step, for MFU");
    cmd->add_option("--calibration", o->calibration,
                    "module: calibration file (default: the topology's topologies/calibration/NAME.yaml)");
    return {cmd, [o] { return command_run(*o); }};
}

}  // namespace podsim::cli
