#include "cli/commands.hpp"

#include <iostream>
#include <memory>

#include "podsim/podsim.hpp"

namespace podsim::cli {

Command add_explain_command(CLI::App& app) {
    auto what = std::make_shared<std::string>("run");
    auto* cmd = app.add_subcommand(
        "explain",
        "list every key of a schema with type, unit, default, help; or every report and sweep field");
    cmd->add_option("what", *what,
                    "run, model, topology, calibration, validation-case, collective-case, calibration-file, "
                    "sweep-file, report (the fields of `podsim run --format json`) or sweep (the columns of "
                    "results.csv, which keep and sort name)")
        ->check(CLI::IsMember(podsim::explainable()));
    return {cmd, [what] {
                std::cout << podsim::explain(*what);
                return 0;
            }};
}

}  // namespace podsim::cli
