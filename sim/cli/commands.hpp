#pragma once

#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "config/run_spec.hpp"

namespace podsim::cli {

// Exit code of a command whose input was wrong (config, options), as for every user error.
constexpr int kUserErrorExit = 2;
// Exit code of a bug in podsim (core::InternalError): 128 + SIGABRT, what a shell reported when a
// broken invariant aborted the process, so scripts that test for it keep working.
constexpr int kInternalErrorExit = 134;
// Exit code of a command that ran out of the machine's memory: neither the input's fault nor a bug.
constexpr int kOutOfMemoryExit = 3;

// A subcommand: its CLI11 node (parsed or not) and what it does once parsed. Each add_* function
// declares the subcommand's options and owns their storage through `run`.
struct Command {
    CLI::App* app = nullptr;
    std::function<int()> run;
};

Command add_run_command(CLI::App& app);
Command add_check_command(CLI::App& app);
Command add_explain_command(CLI::App& app);
Command add_validate_command(CLI::App& app);
Command add_collective_command(CLI::App& app);
Command add_sweep_command(CLI::App& app);  // with `sweep merge`
Command add_calibrate_command(CLI::App& app);

// The given run config, or configs/default.yaml of the data roots when none is given.
std::string resolve_config(const std::string& given);
// The run config `given` names ("-": read from standard input; empty: configs/default.yaml) with
// the `--set key.path=value` overrides applied, checked as `podsim check` checks it.
config::RunSpec load_config(const std::string& given, const std::vector<std::string>& assignments);
// Declares `--set key.path=value` (repeatable) on a subcommand.
void add_set_option(CLI::App* command, std::vector<std::string>& assignments);
// Writes `text` to `path` whole, or throws a core::UserError at `path` saying why it could not be
// written (no such directory, a directory, a full disk): every "written to" message follows it.
void write_file(const std::string& path, const std::string& text);
// An output stream to `path`, or a core::UserError when it cannot be opened; close it with
// close_output, which reports a failed write (a full disk) the same way.
std::ofstream open_output(const std::string& path);
void close_output(std::ofstream& out, const std::string& path);

// A core::UserError about a command-line option of `command` ("podsim sweep", ...).
[[noreturn]] void option_error(const std::string& command, const std::string& option,
                               const std::string& message);

}  // namespace podsim::cli
