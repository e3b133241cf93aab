#include "cli/commands.hpp"

#include "config/load.hpp"
#include "core/diagnostics.hpp"

namespace podsim::cli {

std::string resolve_config(const std::string& given) {
    if (!given.empty()) return given;
    auto fallback = config::default_config_path();
    if (!fallback) {
        core::Diagnostics d;
        d.error(
            {"configs/default.yaml", 0, 0}, "",
            "no config given and no configs/default.yaml found (set PODSIM_HOME to the podsim directory)");
        throw core::UserError(d);
    }
    return fallback->string();
}

[[noreturn]] void option_error(const std::string& option, const std::string& message) {
    core::Diagnostics d;
    d.error({"podsim collective", 0, 0}, option, message);
    throw core::UserError(d);
}

std::vector<std::string> split(const std::string& text, char separator) {
    std::vector<std::string> out;
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find(separator, start);
        if (end == std::string::npos) end = text.size();
        if (end > start) out.push_back(text.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

}  // namespace podsim::cli
