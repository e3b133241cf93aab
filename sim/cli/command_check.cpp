#include "cli/commands.hpp"

#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "config/load.hpp"
#include "core/diagnostics.hpp"

namespace podsim::cli {
namespace {

int command_check(const std::vector<std::string>& paths) {
    core::Diagnostics all;
    for (const auto& path : paths) {
        try {
            config::RunSpec spec = config::load_run_file(path);
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
    auto paths = std::make_shared<std::vector<std::string>>();
    auto* cmd = app.add_subcommand("check", "validate run configs without simulating");
    cmd->add_option("configs", *paths, "run configs")->required();
    return {cmd, [paths] { return command_check(*paths); }};
}

}  // namespace podsim::cli
