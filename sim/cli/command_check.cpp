#include "cli/commands.hpp"

#include <iostream>
#include <memory>

#include <fmt/format.h>

#include "core/diagnostics.hpp"

namespace podsim::cli {
namespace {

struct CheckOptions {
    std::vector<std::string> paths, sets;
};

int command_check(const CheckOptions& o) {
    core::Diagnostics all;
    for (const auto& path : o.paths) {
        try {
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
    auto* cmd = app.add_subcommand("check", "validate run configs without simulating");
    cmd->add_option("configs", o->paths, "run configs; - reads one from standard input")->required();
    add_set_option(cmd, o->sets);
    return {cmd, [o] { return command_check(*o); }};
}

}  // namespace podsim::cli
