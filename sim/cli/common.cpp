#include "cli/commands.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <iostream>

#include <fmt/format.h>

#include "config/load.hpp"
#include "core/bounded_file.hpp"
#include "core/diagnostics.hpp"
#include "podsim/podsim.hpp"

namespace podsim::cli {

std::string resolve_config(const std::string& given) {
    if (!given.empty()) return given;
    auto fallback = config::default_config_path();
    if (!fallback) {
        core::Diagnostics d;
        d.error({"configs/default.yaml", 0, 0}, "",
                "no config given and no configs/default.yaml found: " +
                    config::data_roots_hint(std::filesystem::current_path()));
        throw core::UserError(d);
    }
    return fallback->string();
}

config::RunSpec load_config(const std::string& given, const std::vector<std::string>& assignments) {
    std::vector<podsim::Override> overrides;
    core::Diagnostics d;
    for (const auto& a : assignments) {
        try {
            overrides.push_back(podsim::parse_override(a));
        } catch (const core::UserError& e) {
            d.append(e.diagnostics());
        }
    }
    core::throw_if_errors(d);
    if (given != "-") return podsim::load_run(resolve_config(given), overrides);
    core::FileBytes input = core::read_stream(std::cin, core::kMaxConfigBytes);
    if (!input.error.empty()) {
        d.error({"<stdin>", 0, 0}, "", input.error);
        throw core::UserError(d);
    }
    return podsim::load_run_text(input.bytes, overrides, "<stdin>");
}

void add_set_option(CLI::App* command, std::vector<std::string>& assignments) {
    command->add_option(
        "--set", assignments,
        "change one key before checking, key.path=value (the dotted paths of sweep axes, e.g. "
        "training.global_batch=256 or 'mesh={fsdp: 8}'); repeatable");
}

namespace {

[[noreturn]] void cannot_write(const std::string& path, int error) {
    core::Diagnostics d;
    d.error({path, 0, 0}, "", fmt::format("cannot write the file: {}", std::strerror(error)));
    throw core::UserError(d);
}

}  // namespace

std::ofstream open_output(const std::string& path) {
    errno = 0;
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) cannot_write(path, EISDIR);
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    if (!out) cannot_write(path, errno != 0 ? errno : EIO);
    return out;
}

void close_output(std::ofstream& out, const std::string& path) {
    errno = 0;
    out.close();
    if (!out) cannot_write(path, errno != 0 ? errno : EIO);
}

void write_file(const std::string& path, const std::string& text) {
    std::ofstream out = open_output(path);
    errno = 0;
    out << text;
    // A write that failed on the way (a full disk) set errno then; closing it finds only the bad state.
    const int error = out ? 0 : errno;
    out.close();
    if (!out || error != 0) cannot_write(path, error != 0 ? error : (errno != 0 ? errno : EIO));
}

[[noreturn]] void option_error(const std::string& command, const std::string& option,
                               const std::string& message) {
    core::Diagnostics d;
    d.error({command, 0, 0}, option, message);
    throw core::UserError(d);
}

}  // namespace podsim::cli
