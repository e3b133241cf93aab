#include "cli/commands.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "config/load.hpp"
#include "core/csv.hpp"
#include "profile/calibrate.hpp"
#include "profile/whole_run_suite.hpp"

namespace podsim::cli {
namespace {

struct CalibrateCommand {
    std::string config, suite, params, out;
    std::vector<std::string> profiles, cases;
};

int command_calibrate(const CalibrateCommand& c) {
    std::vector<profile::CalibrationCase> cases;
    std::vector<std::string> params =
        c.params.empty() ? std::vector<std::string>{"mxu_efficiency",      "attention_traffic_pytorch_xla",
                                                    "hbm_efficiency",      "op_overhead",
                                                    "ici_link_efficiency", "collective_overhead"}
                         : core::split_list(c.params, ',');
    profile::check_parameter_names(params);
    // Whole-run cases (whole_run: blocks, hundreds of steps each) answer only for the host and
    // compile parameters; with others they would cost time and pin nothing.
    const bool host_params = std::any_of(params.begin(), params.end(), [](const std::string& p) {
        return profile::is_whole_run_parameter(p);
    });
    if (!c.profiles.empty()) {
        run::RunSpec spec = config::load_run_file(resolve_config(c.config));
        for (const auto& p : c.profiles) cases.push_back(profile::case_from_profile(p, spec, p));
    }
    for (const auto& pair : c.cases) {
        auto eq = pair.find('=');
        if (eq == std::string::npos)
            option_error("podsim calibrate", "--case", fmt::format("'{}' is not CONFIG=PROFILE", pair));
        run::RunSpec spec = config::load_run_file(pair.substr(0, eq));
        cases.push_back(profile::case_from_profile(pair, spec, pair.substr(eq + 1)));
    }
    if (!c.suite.empty()) {
        for (const auto& v : config::load_validation_suite(c.suite)) {
            profile::CalibrationCase cc{v.id, v.run, {}};
            if (v.run.whole_run) {
                if (host_params) cc.targets = profile::whole_run_targets(v);
                if (!cc.targets.empty()) cases.push_back(std::move(cc));
                continue;
            }
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
        option_error("podsim calibrate", "calibrate",
                     "give --profile FILE (with a config), --case CONFIG=PROFILE or --suite DIR");
    // Progress on stderr: in place on a terminal, otherwise one line per fit (logs stay short).
    const bool tty = ::isatty(2) == 1;
    int last_fit = 0;
    auto progress = [&](const profile::CalibrationProgress& p) {
        if (tty) {
            std::fprintf(stderr, "\r%s   ", profile::format_progress(p).c_str());
        } else if (p.fit != last_fit) {
            std::fprintf(stderr, "%s\n", profile::format_progress(p).c_str());
        }
        last_fit = p.fit;
    };
    auto result = profile::calibrate(cases, params, cost::Calibration::defaults(), progress);
    if (tty) std::fprintf(stderr, "\n");
    std::cout << profile::format_calibration(result);
    if (!c.out.empty()) {
        std::string source = "podsim calibrate on";
        for (const auto& cc : cases) source += " " + cc.id;
        write_file(c.out, profile::calibration_yaml(result, source));
        std::cout << fmt::format(
            "\ncalibration written to {} (use it with `calibration: {}` in a run config)\n", c.out, c.out);
    }
    return 0;
}

}  // namespace

Command add_calibrate_command(CLI::App& app) {
    auto o = std::make_shared<CalibrateCommand>();
    auto* cmd =
        app.add_subcommand("calibrate", "fit cost-model parameters to measured profiles or published cases");
    cmd->add_option("config", o->config, "run config the --profile files were measured with");
    cmd->add_option("--profile", o->profiles, "measured profile of CONFIG");
    cmd->add_option("--case", o->cases, "CONFIG=PROFILE pair (repeatable)");
    cmd->add_option("--suite", o->suite, "published cases (podsim.validation/v1 directory)");
    cmd->add_option("--params", o->params, "parameters to fit, comma-separated (podsim explain calibration)");
    cmd->add_option("--out", o->out, "write the fitted calibration (podsim.calibration/v1)");
    return {cmd, [o] { return command_calibrate(*o); }};
}

}  // namespace podsim::cli
