#include "cli/commands.hpp"

#include <filesystem>
#include <iostream>
#include <iterator>

#include "config/load.hpp"
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
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    return podsim::load_run_text(text, overrides, "<stdin>");
}

void add_set_option(CLI::App* command, std::vector<std::string>& assignments) {
    command->add_option(
        "--set", assignments,
        "change one key before checking, key.path=value (the dotted paths of sweep axes, e.g. "
        "training.global_batch=256 or 'mesh={fsdp: 8}'); repeatable");
}

[[noreturn]] void option_error(const std::string& command, const std::string& option,
                               const std::string& message) {
    core::Diagnostics d;
    d.error({command, 0, 0}, option, message);
    throw core::UserError(d);
}

}  // namespace podsim::cli
