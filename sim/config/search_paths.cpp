#include "config/load.hpp"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "config/parse.hpp"
#include "config/yaml_reader.hpp"
#include "core/suggest.hpp"

namespace podsim::config {

namespace fs = std::filesystem;
using core::Diagnostics;
using core::Dimension;
using detail::MapReader;

namespace {

bool is_data_root(const fs::path& dir) {
    std::error_code ec;
    return fs::is_directory(dir / "models", ec) && fs::is_directory(dir / "topologies", ec);
}

void add_ancestors(std::vector<fs::path>& roots, fs::path dir) {
    std::error_code ec;
    dir = fs::weakly_canonical(dir, ec);
    for (int depth = 0; depth < 8 && !dir.empty(); ++depth) {
        if (is_data_root(dir) && std::find(roots.begin(), roots.end(), dir) == roots.end())
            roots.push_back(dir);
        if (dir == dir.parent_path()) break;
        dir = dir.parent_path();
    }
}

}  // namespace

std::vector<std::string> yaml_stems(const fs::path& dir) {
    std::vector<std::string> names;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
        if (entry.path().extension() == ".yaml") names.push_back(entry.path().stem().string());
    }
    std::sort(names.begin(), names.end());
    return names;
}

bool looks_like_path(const std::string& s) {
    return s.find('/') != std::string::npos || s.ends_with(".yaml") || s.ends_with(".yml");
}

std::optional<fs::path> resolve_reference(const MapReader& r, const std::string& key, const std::string& kind,
                                          const fs::path& base_dir) {
    auto value = r.string(key, true);
    if (!value) return std::nullopt;
    if (value->empty()) {
        r.error(key, "empty name");
        return std::nullopt;
    }
    if (looks_like_path(*value)) {
        fs::path p = fs::path(*value).is_absolute() ? fs::path(*value) : base_dir / *value;
        std::error_code ec;
        if (!fs::is_regular_file(p, ec)) {
            r.error(key, fmt::format("no such file: {}", p.string()));
            return std::nullopt;
        }
        return p;
    }
    std::vector<std::string> known;
    for (const auto& root : data_roots(base_dir)) {
        fs::path p = root / kind / (*value + ".yaml");
        std::error_code ec;
        if (fs::is_regular_file(p, ec)) return p;
        if (known.empty()) known = yaml_stems(root / kind);
    }
    std::string message = fmt::format("unknown {} '{}': no {}/{}.yaml",
                                      kind == "models" ? "model" : "topology", *value, kind, *value);
    if (auto hint = core::closest_match(*value, known))
        message += fmt::format(" (did you mean '{}'?)", *hint);
    r.error(key, message);
    return std::nullopt;
}

void check_schema(const MapReader& r, const std::string& expected) {
    auto schema = r.string("schema", true);
    if (schema && *schema != expected)
        r.error("schema", fmt::format("expected '{}', found '{}'", expected, *schema));
}

std::vector<fs::path> data_roots(const fs::path& near) {
    std::vector<fs::path> roots;
    if (const char* home = std::getenv("PODSIM_HOME"); home && *home) add_ancestors(roots, home);
    if (!near.empty()) add_ancestors(roots, fs::is_directory(near) ? near : near.parent_path());
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) add_ancestors(roots, exe.parent_path());
#ifdef PODSIM_SOURCE_DIR
    add_ancestors(roots, PODSIM_SOURCE_DIR);
#endif
    return roots;
}

std::optional<fs::path> default_config_path() {
    for (const auto& root : data_roots(fs::current_path())) {
        fs::path p = root / "configs" / "default.yaml";
        std::error_code ec;
        if (fs::is_regular_file(p, ec)) return p;
    }
    return std::nullopt;
}

hardware::TopologySpec load_topology(const std::string& name_or_path) {
    if (looks_like_path(name_or_path)) return load_topology_file(name_or_path);
    for (const auto& root : data_roots(fs::current_path())) {
        fs::path p = root / "topologies" / (name_or_path + ".yaml");
        std::error_code ec;
        if (fs::is_regular_file(p, ec)) return load_topology_file(p.string());
    }
    Diagnostics d;
    std::vector<std::string> known;
    auto roots = data_roots(fs::current_path());
    if (!roots.empty()) known = yaml_stems(roots.front() / "topologies");
    std::string message = fmt::format("unknown topology '{}'", name_or_path);
    if (auto hint = core::closest_match(name_or_path, known))
        message += fmt::format(" (did you mean '{}'?)", *hint);
    d.error({"--topology", 0, 0}, "", message);
    throw core::UserError(d);
}

workload::ModelSpec load_model(const std::string& name_or_path, const std::string& what) {
    if (looks_like_path(name_or_path)) return load_model_file(name_or_path);
    for (const auto& root : data_roots(fs::current_path())) {
        fs::path p = root / "models" / (name_or_path + ".yaml");
        std::error_code ec;
        if (fs::is_regular_file(p, ec)) return load_model_file(p.string());
    }
    Diagnostics d;
    std::vector<std::string> known;
    auto roots = data_roots(fs::current_path());
    if (!roots.empty()) known = yaml_stems(roots.front() / "models");
    std::string message = fmt::format("unknown model '{}'", name_or_path);
    if (auto hint = core::closest_match(name_or_path, known))
        message += fmt::format(" (did you mean '{}'?)", *hint);
    d.error({what, 0, 0}, "", message);
    throw core::UserError(d);
}

}  // namespace podsim::config
