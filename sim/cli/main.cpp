#include <exception>
#include <iostream>
#include <new>
#include <vector>

#include <fmt/format.h>
#include <CLI/CLI.hpp>

#include "cli/commands.hpp"
#include "core/assert.hpp"
#include "core/diagnostics.hpp"
#include "core/process_heap.hpp"

int main(int argc, char** argv) {
    using namespace podsim::cli;
    CLI::App app{"podsim: predicts a training step of a transformer on a TPU pod slice"};
    app.require_subcommand(1);
    app.set_version_flag("--version", "podsim 0.1.0");
    const std::vector<Command> commands = {
        add_run_command(app),       add_check_command(app),      add_explain_command(app),
        add_validate_command(app),  add_collective_command(app), add_sweep_command(app),
        add_calibrate_command(app),
    };

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        int code = app.exit(e);
        return code == 0 ? 0 : kUserErrorExit;
    }

    try {
        for (const auto& command : commands) {
            if (!*command.app) continue;
            podsim::core::configure_process_heap(/*huge_pages=*/command.app->get_name() != "sweep");
            return command.run();
        }
    } catch (const podsim::core::UserError& e) {
        std::cerr << e.diagnostics().to_string();
        std::cerr << fmt::format("podsim: {} error{}\n", e.diagnostics().size(),
                                 e.diagnostics().size() == 1 ? "" : "s");
        return kUserErrorExit;
    } catch (const podsim::core::InternalError& e) {
        std::cerr << "podsim: " << e.what() << "\n";
        return kInternalErrorExit;
    } catch (const std::bad_alloc&) {
        std::cerr << "podsim: out of memory: this machine cannot hold what the command needs (a "
                     "config with fewer layers or microbatches, or without --trace, needs less)\n";
        return kOutOfMemoryExit;
    } catch (const std::exception& e) {
        // Anything else is a bug too (an input path that lets a library exception through): said as
        // one, rather than std::terminate's abort.
        std::cerr << "podsim: internal error: " << e.what() << "\n";
        return kInternalErrorExit;
    }
    return 0;
}
