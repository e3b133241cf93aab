#include "cli/commands.hpp"

#include <filesystem>
#include <iostream>
#include <memory>

#include "podsim/podsim.hpp"
#include "profile/compare.hpp"
#include "profile/measured_profile.hpp"
#include "profile/suite.hpp"
#include "profile/whole_run_compare.hpp"
#include "run/simulate.hpp"
#include "training_run/whole_run.hpp"

namespace podsim::cli {
namespace {

struct ValidateOptions {
    std::string suite_dir, format = "table", config;
    std::vector<std::string> profiles, sets;
    int steps = 0;
};

int command_validate_profile(const std::string& config_path, const std::vector<std::string>& sets,
                             const std::vector<std::string>& profiles, const std::string& format, int steps) {
    run::RunSpec spec = load_config(config_path, sets);
    run::Simulation sim = run::simulate(spec);
    if (spec.whole_run) {
        // Counts, compilation and the gap between executions over the run the config describes.
        auto whole = training_run::simulate_whole_run(spec, *spec.whole_run);
        for (const auto& file : profiles) {
            auto comparison = profile::compare_whole_run(whole, profile::read_profile(file));
            std::cout << (format == "json" ? profile::whole_run_comparison_json(comparison)
                                           : profile::format_whole_run_comparison(comparison));
        }
        return 0;
    }
    for (const auto& file : profiles) {
        auto measured = profile::with_steps(profile::read_profile(file), steps);
        auto comparison = profile::compare(sim.report, measured, spec.topology.chip.mxu_tile);
        std::cout << (format == "json" ? profile::comparison_json(comparison)
                                       : profile::format_comparison(comparison));
    }
    return 0;
}

int command_validate(const std::string& suite, const std::string& format) {
    auto results = podsim::validate_suite(suite);
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

Command add_validate_command(CLI::App& app) {
    auto o = std::make_shared<ValidateOptions>();
    auto* cmd = app.add_subcommand("validate",
                                   "compare a prediction with measured profiles, or run the accuracy suite");
    cmd->add_option("config", o->config,
                    "run config (default: configs/default.yaml); - reads it from standard input");
    add_set_option(cmd, o->sets);
    cmd->add_option("--profile", o->profiles,
                    "measured profile: Chrome trace (.json/.json.gz), .xplane.pb, pod_viewer JSON, HLO op "
                    "stats CSV, PyTorch/XLA metrics report, PT_XLA_DEBUG log (whole runs)");
    cmd->add_option("--steps", o->steps,
                    "steps the profile covers, for profiles without step markers (HLO op stats)")
        ->check(CLI::PositiveNumber);
    cmd->add_option("--suite", o->suite_dir, "directory of podsim.validation/v1 cases");
    cmd->add_option("--format", o->format, "table, markdown (suite) or json (profile)")
        ->check(CLI::IsMember({"table", "markdown", "json"}));
    return {cmd, [o] {
                if (!o->profiles.empty())
                    return command_validate_profile(o->config, o->sets, o->profiles, o->format, o->steps);
                if (o->suite_dir.empty())
                    option_error("podsim validate", "", "give --profile FILE or --suite DIR");
                return command_validate(o->suite_dir, o->format);
            }};
}

}  // namespace podsim::cli
