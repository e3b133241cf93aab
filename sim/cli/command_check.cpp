#include "cli/commands.hpp"

#include <fstream>
#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "config/sweep_file.hpp"
#include "core/diagnostics.hpp"

namespace podsim::cli {
namespace {

struct CheckOptions {
    std::vector<std::string> paths, sets;
};

// A sweep file names its schema on a top-level line of its own.
bool is_sweep_file(const std::string& path) {
    if (path == "-") return false;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("schema:", 0) == 0) return line.find("podsim.sweep/v1") != std::string::npos;
    }
    return false;
}

int command_check(const CheckOptions& o) {
    core::Diagnostics all;
    for (const auto& path : o.paths) {
        try {
            if (is_sweep_file(path)) {
                auto plan = config::SweepPlan::load(path);
                std::cout << fmt::format("{}: ok (sweep of {} configs)\n", path, plan.size());
                continue;
            }
            config::RunSpec spec = load_config(path, o.sets);
            std::cout << fmt::format("{}: ok ({} on {} {}, mesh {})\n", path, spec.model.name,
                                     spec.topology.name, spec.slice.to_string(), spec.mesh.to_string());
        } catch (const core::UserError& e) {
            all.append(e.diagnostics());
        }
    }
    if (!all.empty()) throw core::UserError(all);
    return 0;
}

}  // namespace

Command add_check_command(CLI::App& app) {
    auto o = std::make_shared<CheckOptions>();
    auto* cmd = app.add_subcommand("check", "validate run configs and sweep files without simulating");
    cmd->add_option("configs", o->paths,
                    "run configs or sweep files; - reads a run config from standard input")
        ->required();
    add_set_option(cmd, o->sets);
    return {cmd, [o] { return command_check(*o); }};
}

}  // namespace podsim::cli
