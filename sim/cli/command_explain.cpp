#include "cli/commands.hpp"

#include <iostream>
#include <memory>

#include "config/schema.hpp"

namespace podsim::cli {

Command add_explain_command(CLI::App& app) {
    auto what = std::make_shared<std::string>("run");
    auto* cmd = app.add_subcommand("explain", "list every key of a schema with type, unit, default, help");
    cmd->add_option("what", *what, "run, model, topology or calibration")
        ->check(CLI::IsMember(config::explainable()));
    return {cmd, [what] {
                std::cout << config::explain(*what);
                return 0;
            }};
}

}  // namespace podsim::cli
