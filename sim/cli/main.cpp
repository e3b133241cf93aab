// podsim command line: run, check, explain, validate.
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "config/load.hpp"
#include "config/schema.hpp"
#include "core/diagnostics.hpp"
#include "core/quantity.hpp"
#include "profile/calibrate.hpp"
#include "profile/compare.hpp"
#include "profile/measured_profile.hpp"
#include "profile/suite.hpp"
#include "report/format.hpp"
#include "report/torus_svg.hpp"
#include "run/collective_run.hpp"
#include "run/simulate.hpp"
#include "sweep/sweep_runner.hpp"

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
    std::string out =
        "mesh axis -> torus dimensions (size, stride, ring or line) and the chips of each group\n";
    const char* names = "xyzw";
    for (const auto& axis : sim.mapping) {
        out += fmt::format("  {:<8} size {:<5}", axis.axis, axis.size);
        for (const auto& p : axis.parts) {
            out +=
                fmt::format(" {}:{} stride {} {}", names[p.dim], p.size, p.stride, p.wraps ? "ring" : "line");
        }
        out += "\n";
        if (!sim.torus) continue;
        auto groups = sim.torus->groups(axis);
        const std::size_t shown = std::min<std::size_t>(groups.size(), 4);
        for (std::size_t g = 0; g < shown; ++g) {
            std::string members;
            for (int chip : groups[g]) {
                const auto& c = sim.torus->coord_of(chip);
                members += fmt::format(" ({},{},{})", c[0], c[1], c[2]);
            }
            out += fmt::format("    group {}:{}\n", g, members);
        }
        if (groups.size() > shown) out += fmt::format("    ... {} groups in all\n", groups.size());
    }
    return out;
}

std::string dump_opgraph(const run::Simulation& sim) {
    // The unsharded step of one microbatch: what the workload module lowered the model to.
    std::string out = fmt::format("{:>5}  {:<9} {:<7} {:<44} {:>26} {:>12}  inputs\n", "op", "phase", "kind",
                                  "name", "matmul [batch] m x n x k", "FLOPs");
    const auto& g = *sim.graph;
    for (int i : g.topological_order()) {
        const auto& op = g.op(i);
        std::string shape, preds;
        double flops = 0.0;
        if (op.kind == workload::OpKind::matmul) {
            const auto& m = op.matmul;
            double batch = static_cast<double>(m.batch[0].size * m.batch[1].size);
            shape = fmt::format("[{}] {} x {} x {}", m.batch[0].size * m.batch[1].size, m.m.size, m.n.size,
                                m.k.size);
            flops = 2.0 * batch * static_cast<double>(m.m.size) * static_cast<double>(m.n.size) *
                    static_cast<double>(m.k.size);
        }
        for (int p : g.predecessors(i)) preds += fmt::format("{} ", p);
        const char* kind = op.kind == workload::OpKind::matmul   ? "matmul"
                           : op.kind == workload::OpKind::fusion ? "fusion"
                                                                 : "update";
        out += fmt::format("{:>5}  {:<9} {:<7} {:<44} {:>26} {:>12.4g}  {}\n", i,
                           workload::phase_name(op.phase), kind, op.name, shape, flops, preds);
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
        out += fmt::format(
            "{:>5}  {:<12} {:<10} {:<44} {:>12.4g} {:>12.4g} {:>10}  {}\n", i,
            sim.program.resources[static_cast<std::size_t>(op.resource)].name, workload::phase_name(op.phase),
            op.name, op.flops, bytes,
            core::format_seconds(core::to_seconds(sim.timeline.spans[i].end - sim.timeline.spans[i].start)),
            deps);
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
    if (dump == "opgraph") {
        std::cout << dump_opgraph(sim);
    } else if (dump == "mapping") {
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

struct CollectiveOptions {
    std::string topology = "tpu-v4", slice, mesh, op = "all-gather", axis, bytes = "64MiB", sweep,
                format = "table", svg;
    bool twisted = false;
};

[[noreturn]] void option_error(const std::string& option, const std::string& message) {
    core::Diagnostics d;
    d.error({"podsim collective", 0, 0}, option, message);
    throw core::UserError(d);
}

double parse_bytes(const std::string& option, const std::string& text) {
    auto q = core::parse_quantity(text, core::Dimension::bytes);
    if (!q.ok) option_error(option, q.error);
    if (q.value <= 0) option_error(option, "must be positive");
    return q.value;
}

std::vector<std::string> split(const std::string& text, char separator) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find(separator, start);
        if (end == std::string::npos) end = text.size();
        if (end > start) out.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

int command_collective(const CollectiveOptions& o) {
    run::CollectiveRequest request;
    request.topology = config::load_topology(o.topology);
    auto slice = hardware::parse_slice_shape(o.slice);
    if (!slice) option_error("--slice", fmt::format("'{}' is not a slice shape such as 4x4x4", o.slice));
    request.slice = hardware::normalized_slice(request.topology, *slice);
    if (!o.mesh.empty()) {
        auto axes = network::parse_axis_list(o.mesh);
        if (!axes)
            option_error("--mesh", fmt::format("'{}' is not name=size,... (e.g. fsdp=16,tensor=4)", o.mesh));
        request.mesh.ici = *axes;
    }
    if (request.mesh.ici.empty())
        request.mesh.ici.push_back({"all", static_cast<int>(request.slice.chips())});
    auto kind = collectives::parse_collective(o.op);
    if (!kind)
        option_error("--op", fmt::format("'{}' is not one of all-gather, reduce-scatter, all-reduce, "
                                         "all-to-all, collective-permute",
                                         o.op));
    request.kind = *kind;
    request.axes =
        o.axis.empty() ? std::vector<std::string>{request.mesh.ici.front().name} : split(o.axis, ',');
    request.twisted = o.twisted;

    std::vector<double> sizes;
    if (!o.sweep.empty()) {
        auto dots = o.sweep.find("..");
        if (dots == std::string::npos) option_error("--sweep-bytes", "write a range such as 1KiB..4GiB");
        double lo = parse_bytes("--sweep-bytes", o.sweep.substr(0, dots));
        double hi = parse_bytes("--sweep-bytes", o.sweep.substr(dots + 2));
        for (double b = lo; b <= hi * (1 + 1e-9); b *= 2) sizes.push_back(b);
    } else {
        sizes.push_back(parse_bytes("--bytes", o.bytes));
    }

    if (!o.sweep.empty() || o.format == "csv") {
        std::cout << "bytes,time_s,closed_form_s,algorithm_bandwidth_bytes_per_s,bus_bandwidth_bytes_per_s\n";
    }
    for (double bytes : sizes) {
        request.bytes = bytes;
        run::CollectiveResult r = run::run_collective(request);
        if (!o.sweep.empty() || o.format == "csv") {
            std::cout << fmt::format("{:.0f},{:.9g},{:.9g},{:.6g},{:.6g}\n", bytes, r.time_s, r.closed_form_s,
                                     r.algorithm_bandwidth, r.bus_bandwidth);
            continue;
        }
        if (o.format == "json") {
            std::string links;
            for (const auto& l : r.links) {
                links += fmt::format(
                    "{}{{\"dim\": {}, \"direction\": {}, \"links_used\": {}, \"max_bytes\": {:.6g}, "
                    "\"max_utilization\": {:.6g}, \"mean_utilization\": {:.6g}}}",
                    links.empty() ? "" : ", ", l.dim, l.direction, l.links_used, l.max_bytes,
                    l.max_utilization, l.mean_utilization);
            }
            std::cout << fmt::format(
                "{{\"op\": \"{}\", \"bytes\": {:.0f}, \"group_size\": {}, \"time_s\": {:.9g}, "
                "\"closed_form_s\": {:.9g}, \"algorithm_bandwidth_bytes_per_s\": {:.6g}, "
                "\"bus_bandwidth_bytes_per_s\": {:.6g}, \"phases\": {}, \"links\": [{}]}}\n",
                o.op, bytes, r.group_size, r.time_s, r.closed_form_s, r.algorithm_bandwidth, r.bus_bandwidth,
                r.plan.phases.size(), links);
        } else {
            const char* names = "xyzw";
            std::string placement;
            for (const auto& p : r.parts) {
                placement += fmt::format(" {}:{}{}{}", names[p.dim], p.size,
                                         p.stride > 1 ? fmt::format("/stride {}", p.stride) : "",
                                         p.wraps ? " ring" : " line");
            }
            std::cout << fmt::format("{} of {} over {} ({} chips:{}) on {} {}\n", o.op,
                                     core::format_bytes(bytes), fmt::join(request.axes, ","), r.group_size,
                                     placement, request.topology.name, request.slice.to_string());
            std::cout << fmt::format("  time                 {}  (closed form {})\n",
                                     core::format_seconds(r.time_s), core::format_seconds(r.closed_form_s));
            std::cout << fmt::format(
                "  algorithm bandwidth  {}\n  bus bandwidth        {}\n  phases               {}\n",
                core::format_bandwidth(r.algorithm_bandwidth), core::format_bandwidth(r.bus_bandwidth),
                r.plan.phases.size());
            std::cout << "  link utilisation (representative line of each dimension)\n";
            for (const auto& l : r.links) {
                std::cout << fmt::format(
                    "    {}{}  {:>3} links  busiest {:5.1f}%  mean {:5.1f}%  ({} on the busiest)\n",
                    names[l.dim], l.direction > 0 ? "+" : "-", l.links_used, 100 * l.max_utilization,
                    100 * l.mean_utilization, core::format_bytes(l.max_bytes));
            }
        }
        if (!o.svg.empty()) {
            network::Torus torus(request.topology, request.slice, request.twisted);
            std::ofstream(o.svg) << report::torus_svg(
                torus, r.groups, r.parts,
                fmt::format("{} over {} on {} {}: each colour is one group's rings", o.op,
                            fmt::join(request.axes, ","), request.topology.name, request.slice.to_string()));
        }
    }
    return 0;
}

struct SweepCommand {
    std::string file, out, shard, best_config;
    int jobs = 0;
    bool resume = false, no_progress = false;
    std::size_t top = 10, limit = 0;
    std::vector<std::string> merge_dirs;
    std::string merge_file, merge_out;
};

int command_sweep(const SweepCommand& c) {
    auto plan = config::SweepPlan::load(c.file);
    sweep::SweepOptions options;
    options.jobs = c.jobs;
    options.out_dir = c.out;
    options.resume = c.resume;
    options.top = c.top;
    options.limit = c.limit;
    options.progress = !c.no_progress;
    if (!c.shard.empty()) {
        int k = 0, n = 0;
        char slash = 0;
        std::istringstream in(c.shard);
        if (!(in >> k >> slash >> n) || slash != '/' || n < 1 || k < 1 || k > n || !in.eof()) {
            option_error("--shard", fmt::format("'{}' is not K/N with 1 <= K <= N (e.g. 3/8)", c.shard));
        }
        options.shard_index = k;
        options.shard_count = n;
    }
    auto summary = sweep::run_sweep(plan, options);
    std::cout << sweep::format_summary(summary);
    if (!c.out.empty()) std::cout << fmt::format("\nresults: {}/results.csv and results.jsonl\n", c.out);
    if (!c.best_config.empty()) {
        if (summary.ranked.empty()) option_error("--best-config", "no config was kept: nothing to write");
        std::ofstream out(c.best_config);
        out << "# Best config of sweep " << c.file << " by " << summary.sort_key << " (index "
            << summary.ranked.front().index << ")\n"
            << plan.make(summary.ranked.front().index, true).run_yaml << "\n";
        std::cout << fmt::format("best config written to {}\n", c.best_config);
    }
    return 0;
}

int command_sweep_merge(const SweepCommand& c) {
    auto plan = config::SweepPlan::load(c.merge_file);
    auto summary = sweep::merge_shards(plan, c.merge_dirs, c.merge_out);
    std::cout << sweep::format_summary(summary);
    std::cout << fmt::format("\nmerged {} shard(s) into {}/results.csv and results.jsonl\n",
                             c.merge_dirs.size(), c.merge_out);
    return 0;
}

int command_validate_profile(const std::string& config_path, const std::vector<std::string>& profiles,
                             const std::string& format) {
    run::RunSpec spec = config::load_run_file(resolve_config(config_path));
    run::Simulation sim = run::simulate(spec);
    for (const auto& file : profiles) {
        auto measured = profile::read_profile(file);
        auto comparison = profile::compare(sim.report, measured, spec.topology.chip.mxu_tile);
        std::cout << (format == "json" ? profile::comparison_json(comparison)
                                       : profile::format_comparison(comparison));
    }
    return 0;
}

struct CalibrateCommand {
    std::string config, suite, params, out;
    std::vector<std::string> profiles, cases;
};

int command_calibrate(const CalibrateCommand& c) {
    std::vector<profile::CalibrationCase> cases;
    if (!c.profiles.empty()) {
        run::RunSpec spec = config::load_run_file(resolve_config(c.config));
        for (const auto& p : c.profiles) cases.push_back(profile::case_from_profile(p, spec, p));
    }
    for (const auto& pair : c.cases) {
        auto eq = pair.find('=');
        if (eq == std::string::npos) option_error("--case", fmt::format("'{}' is not CONFIG=PROFILE", pair));
        run::RunSpec spec = config::load_run_file(pair.substr(0, eq));
        cases.push_back(profile::case_from_profile(pair, spec, pair.substr(eq + 1)));
    }
    if (!c.suite.empty()) {
        for (const auto& v : config::load_validation_suite(c.suite)) {
            profile::CalibrationCase cc{v.id, v.run, {}};
            if (v.measured.count("step_time_s")) {
                cc.targets.push_back({profile::Target::Kind::step_time, "", v.measured.at("step_time_s")});
            }
            if (v.measured.count("all_reduce_fraction")) {
                cc.targets.push_back(
                    {profile::Target::Kind::all_reduce_fraction, "", v.measured.at("all_reduce_fraction")});
            }
            if (!cc.targets.empty()) cases.push_back(std::move(cc));
        }
    }
    if (cases.empty())
        option_error("calibrate",
                     "give --profile FILE (with a config), --case CONFIG=PROFILE or --suite DIR");
    std::vector<std::string> params =
        c.params.empty() ? std::vector<std::string>{"mxu_efficiency_jax",  "mxu_efficiency_pytorch_xla",
                                                    "hbm_efficiency",      "op_overhead",
                                                    "ici_link_efficiency", "collective_overhead"}
                         : split(c.params, ',');
    auto result = profile::calibrate(cases, params, cost::Calibration::defaults());
    std::cout << profile::format_calibration(result);
    if (!c.out.empty()) {
        std::string source = "podsim calibrate on";
        for (const auto& cc : cases) source += " " + cc.id;
        std::ofstream(c.out) << profile::calibration_yaml(result, source);
        std::cout << fmt::format(
            "\ncalibration written to {} (use it with `calibration: {}` in a run config)\n", c.out, c.out);
    }
    return 0;
}

int command_validate(const std::string& suite, const std::string& format) {
    auto cases = config::load_validation_suite(suite);
    auto results = profile::evaluate_suite(cases);
    // Measured collectives, when the suite has them (tests/validation/collectives/).
    std::filesystem::path collective_dir = std::filesystem::path(suite) / "collectives";
    if (std::filesystem::is_directory(collective_dir)) {
        auto collective =
            profile::evaluate_collective_suite(config::load_collective_suite(collective_dir.string()));
        results.insert(results.end(), collective.begin(), collective.end());
    }
    if (format == "markdown") {
        std::cout << profile::format_suite_markdown(results);
    } else if (format == "json") {
        std::cout << profile::format_suite_json(results);
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
    run_cmd
        ->add_option("--dump", dump,
                     "print one stage instead of the report: opgraph, mapping, program, timeline")
        ->check(CLI::IsMember({"opgraph", "mapping", "program", "timeline"}));

    std::vector<std::string> check_paths;
    auto* check_cmd = app.add_subcommand("check", "validate run configs without simulating");
    check_cmd->add_option("configs", check_paths, "run configs")->required();

    std::string explain_what = "run";
    auto* explain_cmd =
        app.add_subcommand("explain", "list every key of a schema with type, unit, default, help");
    explain_cmd->add_option("what", explain_what, "run, model, topology or calibration")
        ->check(CLI::IsMember(podsim::config::explainable()));

    std::string suite_dir, suite_format = "table", validate_config;
    std::vector<std::string> profiles;
    auto* validate_cmd = app.add_subcommand(
        "validate", "compare a prediction with measured profiles, or run the accuracy suite");
    validate_cmd->add_option("config", validate_config, "run config (default: configs/default.yaml)");
    validate_cmd->add_option(
        "--profile", profiles,
        "measured profile: Chrome trace (.json/.json.gz), .xplane.pb, pod_viewer JSON, HLO op "
        "stats CSV, PyTorch/XLA metrics report");
    validate_cmd->add_option("--suite", suite_dir, "directory of podsim.validation/v1 cases");
    validate_cmd->add_option("--format", suite_format, "table, markdown (suite) or json (profile)")
        ->check(CLI::IsMember({"table", "markdown", "json"}));

    CollectiveOptions coll;
    auto* coll_cmd = app.add_subcommand("collective", "simulate one collective on a slice (microbenchmark)");
    coll_cmd->add_option("--topology", coll.topology, "topology name or file");
    coll_cmd->add_option("--slice", coll.slice, "slice shape, e.g. 4x4x4")->required();
    coll_cmd->add_option("--mesh", coll.mesh, "mesh axes, e.g. fsdp=16,tensor=4 (names are free)");
    coll_cmd->add_option("--op", coll.op,
                         "all-gather, reduce-scatter, all-reduce, all-to-all, collective-permute");
    coll_cmd->add_option("--axis", coll.axis,
                         "mesh axis (or axes, comma-separated) the collective runs over");
    coll_cmd->add_option("--bytes", coll.bytes,
                         "the full array (all-gather output, all-reduce input), e.g. 64MiB");
    coll_cmd->add_option("--sweep-bytes", coll.sweep, "a range such as 1KiB..4GiB, doubling; prints CSV");
    coll_cmd->add_option("--format", coll.format, "table, json or csv")
        ->check(CLI::IsMember({"table", "json", "csv"}));
    coll_cmd->add_flag("--twisted", coll.twisted, "use the twisted torus where the shape allows it");
    coll_cmd->add_option("--svg", coll.svg, "write a picture of the groups' rings (x-y plane)");

    SweepCommand sweep_options;
    auto* sweep_cmd = app.add_subcommand("sweep", "explore many configs from a podsim.sweep/v1 file");
    sweep_cmd->add_option("file", sweep_options.file, "sweep file");
    sweep_cmd->add_option("--jobs", sweep_options.jobs, "parallel simulations (default: cores)");
    sweep_cmd->add_option("--out", sweep_options.out, "directory for results.csv and results.jsonl");
    sweep_cmd->add_flag("--resume", sweep_options.resume, "skip configs already in --out");
    sweep_cmd->add_option("--shard", sweep_options.shard, "run the K-th of N slices of the sweep, e.g. 3/8");
    sweep_cmd->add_option("--best-config", sweep_options.best_config,
                          "write the best config as a run config");
    sweep_cmd->add_option("--top", sweep_options.top, "rows in the ranked table (default 10)");
    sweep_cmd->add_option("--limit", sweep_options.limit, "stop after this many configs");
    sweep_cmd->add_flag("--no-progress", sweep_options.no_progress, "no progress on stderr");
    auto* merge_cmd = sweep_cmd->add_subcommand("merge", "join the results of shards");
    merge_cmd->add_option("file", sweep_options.merge_file, "the sweep file the shards ran")->required();
    merge_cmd->add_option("shards", sweep_options.merge_dirs, "shard --out directories")->required();
    merge_cmd->add_option("--out", sweep_options.merge_out, "directory for the merged results")->required();

    CalibrateCommand cal;
    auto* cal_cmd =
        app.add_subcommand("calibrate", "fit cost-model parameters to measured profiles or published cases");
    cal_cmd->add_option("config", cal.config, "run config the --profile files were measured with");
    cal_cmd->add_option("--profile", cal.profiles, "measured profile of CONFIG");
    cal_cmd->add_option("--case", cal.cases, "CONFIG=PROFILE pair (repeatable)");
    cal_cmd->add_option("--suite", cal.suite, "published cases (podsim.validation/v1 directory)");
    cal_cmd->add_option("--params", cal.params,
                        "parameters to fit, comma-separated (podsim explain calibration)");
    cal_cmd->add_option("--out", cal.out, "write the fitted calibration (podsim.calibration/v1)");

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
        if (*validate_cmd) {
            if (!profiles.empty()) return command_validate_profile(validate_config, profiles, suite_format);
            if (suite_dir.empty()) option_error("validate", "give --profile FILE or --suite DIR");
            return command_validate(suite_dir, suite_format);
        }
        if (*coll_cmd) return command_collective(coll);
        if (*merge_cmd) return command_sweep_merge(sweep_options);
        if (*cal_cmd) return command_calibrate(cal);
        if (*sweep_cmd) {
            if (sweep_options.file.empty())
                option_error("sweep", "give a sweep file (configs/sweeps/*.yaml)");
            return command_sweep(sweep_options);
        }
    } catch (const podsim::core::UserError& e) {
        std::cerr << e.diagnostics().to_string();
        std::cerr << fmt::format("podsim: {} error{}\n", e.diagnostics().size(),
                                 e.diagnostics().size() == 1 ? "" : "s");
        return kUserErrorExit;
    }
    return 0;
}
