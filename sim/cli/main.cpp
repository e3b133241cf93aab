// podsim command line: run, check, explain, validate.
#include <cstdio>
#include <fstream>
#include <iostream>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "config/load.hpp"
#include "config/schema.hpp"
#include "core/diagnostics.hpp"
#include "profile/suite.hpp"
#include "report/format.hpp"
#include "run/simulate.hpp"

namespace {

constexpr int kUserErrorExit = 2;

using namespace podsim;

std::string resolve_config(const std::string& given) {
    if (!given.empty()) return given;
    auto fallback = config::default_config_path();
    if (!fallback) {
        core::Diagnostics d;
        d.error(
            {"configs/default.yaml", 0, 0}, "",
            "no config given and no configs/default.yaml found (set PODSIM_HOME to the podsim directory)");
        throw core::UserError(d);
    }
    return fallback->string();
}

std::string dump_mapping(const run::Simulation& sim) {
    std::string out = "mesh axis -> torus dimensions (size, stride, ring or line)\n";
    const char* names = "xyzw";
    for (const auto& axis : sim.mapping) {
        out += fmt::format("  {:<8} size {:<5}", axis.axis, axis.size);
        for (const auto& p : axis.parts) {
            out +=
                fmt::format(" {}:{} stride {} {}", names[p.dim], p.size, p.stride, p.wraps ? "ring" : "line");
        }
        out += "\n";
    }
    return out;
}

std::string dump_program(const run::Simulation& sim) {
    std::string out = fmt::format("{:>5}  {:<12} {:<10} {:<44} {:>12} {:>12} {:>10}  deps\n", "op",
                                  "resource", "phase", "name", "flops", "bytes", "time");
    for (std::size_t i = 0; i < sim.program.ops.size(); ++i) {
        const auto& op = sim.program.ops[i];
        std::string deps;
        for (int d : op.deps) deps += fmt::format("{} ", d);
        double bytes = parallel::is_collective(op.category) ? op.collective_bytes : op.bytes;
        out += fmt::format("{:>5}  {:<12} {:<10} {:<44} {:>12.4g} {:>12.4g} {:>10}  {}\n", i,
                           sim.program.resources[static_cast<std::size_t>(op.resource)].name,
                           workload::phase_name(op.phase), op.name, op.flops, bytes,
                           core::format_seconds(sim.costs[i].seconds), deps);
    }
    return out;
}

std::string dump_timeline(const run::Simulation& sim) {
    std::string out = fmt::format("{:>14} {:>14}  {:<12} {}\n", "start_us", "end_us", "resource", "op");
    std::vector<int> order(sim.program.ops.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return sim.timeline.spans[static_cast<std::size_t>(a)].start <
               sim.timeline.spans[static_cast<std::size_t>(b)].start;
    });
    for (int i : order) {
        const auto& s = sim.timeline.spans[static_cast<std::size_t>(i)];
        out += fmt::format("{:>14.3f} {:>14.3f}  {:<12} {}\n", core::to_seconds(s.start) * 1e6,
                           core::to_seconds(s.end) * 1e6,
                           sim.program.resources[static_cast<std::size_t>(s.resource)].name,
                           sim.program.ops[static_cast<std::size_t>(i)].name);
    }
    return out;
}

int command_run(const std::string& config_path, const std::string& format, const std::string& trace_path,
                const std::string& dump) {
    run::RunSpec spec = config::load_run_file(resolve_config(config_path));
    run::Simulation sim = run::simulate(spec);
    if (dump == "mapping") {
        std::cout << dump_mapping(sim);
    } else if (dump == "program") {
        std::cout << dump_program(sim);
    } else if (dump == "timeline") {
        std::cout << dump_timeline(sim);
    } else if (format == "json") {
        std::cout << report::format_json(sim.report);
    } else {
        std::cout << report::format_table(sim.report);
    }
    if (!trace_path.empty()) {
        std::ofstream out(trace_path);
        if (!out) {
            core::Diagnostics d;
            d.error({trace_path, 0, 0}, "", "cannot write the trace file");
            throw core::UserError(d);
        }
        out << report::chrome_trace(spec.name, sim.program, sim.timeline, sim.memory);
        if (format != "json" && dump.empty()) std::cout << fmt::format("\ntrace written to {}\n", trace_path);
    }
    return 0;
}

int command_check(const std::vector<std::string>& paths) {
    core::Diagnostics all;
    for (const auto& path : paths) {
        try {
            run::RunSpec spec = config::load_run_file(path);
            std::cout << fmt::format("{}: ok ({} on {} {}, mesh {})\n", path, spec.model.name,
                                     spec.topology.name, spec.slice.to_string(), spec.mesh.to_string());
        } catch (const core::UserError& e) {
            all.append(e.diagnostics());
        }
    }
    if (!all.empty()) throw core::UserError(all);
    return 0;
}

int command_validate(const std::string& suite, const std::string& format) {
    auto cases = config::load_validation_suite(suite);
    auto results = profile::evaluate_suite(cases);
    if (format == "markdown") {
        std::cout << profile::format_suite_markdown(results);
    } else {
        std::cout << profile::format_suite(results);
    }
    return profile::suite_passed(results) ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"podsim: predicts a training step of a transformer on a TPU pod slice"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "podsim 0.1.0");

    std::string run_config, format = "table", trace_path, dump;
    auto* run_cmd =
        app.add_subcommand("run", "simulate one step of a run config (default: configs/default.yaml)");
    run_cmd->add_option("config", run_config, "run config (podsim.run/v1)");
    run_cmd->add_option("--format", format, "table or json")->check(CLI::IsMember({"table", "json"}));
    run_cmd->add_option("--trace", trace_path, "write a Chrome trace (Perfetto) of the predicted step");
    run_cmd->add_option("--dump", dump, "print one stage instead of the report: mapping, program, timeline")
        ->check(CLI::IsMember({"mapping", "program", "timeline"}));

    std::vector<std::string> check_paths;
    auto* check_cmd = app.add_subcommand("check", "validate run configs without simulating");
    check_cmd->add_option("configs", check_paths, "run configs")->required();

    std::string explain_what = "run";
    auto* explain_cmd =
        app.add_subcommand("explain", "list every key of a schema with type, unit, default, help");
    explain_cmd->add_option("what", explain_what, "run, model, topology or calibration")
        ->check(CLI::IsMember(podsim::config::explainable()));

    std::string suite_dir, suite_format = "table";
    auto* validate_cmd = app.add_subcommand("validate", "compare predictions with published measurements");
    validate_cmd->add_option("--suite", suite_dir, "directory of podsim.validation/v1 cases")->required();
    validate_cmd->add_option("--format", suite_format, "table or markdown")
        ->check(CLI::IsMember({"table", "markdown"}));

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int code = app.exit(e);
        return code == 0 ? 0 : kUserErrorExit;
    }

    try {
        if (*run_cmd) return command_run(run_config, format, trace_path, dump);
        if (*check_cmd) return command_check(check_paths);
        if (*explain_cmd) {
            std::cout << podsim::config::explain(explain_what);
            return 0;
        }
        if (*validate_cmd) return command_validate(suite_dir, suite_format);
    } catch (const podsim::core::UserError& e) {
        std::cerr << e.diagnostics().to_string();
        std::cerr << fmt::format("podsim: {} error{}\n", e.diagnostics().size(),
                                 e.diagnostics().size() == 1 ? "" : "s");
        return kUserErrorExit;
    }
    return 0;
}
