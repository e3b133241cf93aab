#include "config/load.hpp"

#include <algorithm>
#include <cstdlib>

#include <dlfcn.h>

#include <fmt/format.h>
#include <fmt/ranges.h>

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

// `dir` itself, or `dir`/share/podsim: the data of a podsim installed under the prefix `dir`.
void add_root(std::vector<fs::path>& roots, const fs::path& dir) {
    for (const auto& candidate : {dir, dir / "share" / "podsim"}) {
        if (is_data_root(candidate) && std::find(roots.begin(), roots.end(), candidate) == roots.end())
            roots.push_back(candidate);
    }
}

void add_ancestors(std::vector<fs::path>& roots, fs::path dir) {
    std::error_code ec;
    dir = fs::weakly_canonical(dir, ec);
    for (int depth = 0; depth < 8 && !dir.empty(); ++depth) {
        add_root(roots, dir);
        if (dir == dir.parent_path()) break;
        dir = dir.parent_path();
    }
}

// The files holding this code: the shared object it is linked into (the Python extension), then
// the executable. An installed podsim finds its data from where it was installed.
std::vector<fs::path> own_binaries() {
    std::vector<fs::path> binaries;
    std::error_code ec;
    fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec) exe.clear();
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void*>(&own_binaries), &info) != 0 && info.dli_fname != nullptr) {
        fs::path object = fs::weakly_canonical(info.dli_fname, ec);
        // For code in the executable itself, dli_fname is empty or argv[0]: /proc/self/exe says it.
        if (!ec && fs::is_regular_file(object, ec) && (exe.empty() || !fs::equivalent(object, exe, ec)))
            binaries.push_back(object);
    }
    if (!exe.empty()) binaries.push_back(exe);
    return binaries;
}

bool inside(const fs::path& file, const fs::path& dir) {
    std::error_code ec;
    fs::path canonical_dir = fs::weakly_canonical(dir, ec);
    auto [end, _] = std::mismatch(canonical_dir.begin(), canonical_dir.end(), file.begin(), file.end());
    return !ec && end == canonical_dir.end();
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
    r.error(key, unknown_reference_message(*value, kind, known) + "; " + data_roots_hint(base_dir));
    return std::nullopt;
}

std::optional<fs::path> find_reference(const std::string& value, const std::string& kind,
                                       const fs::path& base_dir) {
    std::error_code ec;
    if (value.empty()) return std::nullopt;
    if (looks_like_path(value)) {
        fs::path p = fs::path(value).is_absolute() ? fs::path(value) : base_dir / value;
        if (fs::is_regular_file(p, ec)) return p;
        return std::nullopt;
    }
    for (const auto& root : data_roots(base_dir)) {
        fs::path p = root / kind / (value + ".yaml");
        if (fs::is_regular_file(p, ec)) return p;
    }
    return std::nullopt;
}

std::string unknown_reference_message(const std::string& value, const std::string& kind,
                                      const std::vector<std::string>& known) {
    const std::string what = kind == "models" ? "model" : "topology";
    std::string message = fmt::format("unknown {} '{}': no {}/{}.yaml", what, value, kind, value);
    if (auto hint = core::closest_name(value, known)) {
        message += fmt::format(" (did you mean '{}'?)", *hint);
    } else if (!known.empty()) {
        std::string names;
        for (const auto& k : known) names += (names.empty() ? "" : ", ") + k;
        message += fmt::format("; the known {} are {}", kind, names);
    }
    return message;
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
    auto binaries = own_binaries();
    for (const auto& binary : binaries) add_ancestors(roots, binary.parent_path());
#ifdef PODSIM_INSTALL_DATA_DIR
    add_root(roots, PODSIM_INSTALL_DATA_DIR);
#endif
#if defined(PODSIM_SOURCE_DIR) && defined(PODSIM_BINARY_DIR)
    // The source tree only for binaries still in the build tree: an installed podsim must not
    // depend on the checkout it was built from.
    for (const auto& binary : binaries) {
        if (inside(binary, PODSIM_BINARY_DIR)) {
            add_ancestors(roots, PODSIM_SOURCE_DIR);
            break;
        }
    }
#endif
    return roots;
}

std::string data_roots_hint(const fs::path& near) {
    auto roots = data_roots(near);
    std::vector<std::string> places;
    auto add = [&](const fs::path& dir) {
        std::error_code ec;
        std::string place = fs::weakly_canonical(dir.empty() ? fs::path(".") : dir, ec).string();
        if (std::find(places.begin(), places.end(), place) == places.end()) places.push_back(place);
    };
    std::string where;
    if (roots.empty()) {
        add(near);
        for (const auto& binary : own_binaries()) add(binary.parent_path());
        where = "found no directory holding models/ and topologies/ above " +
                fmt::format("{}", fmt::join(places, ", "));
#ifdef PODSIM_INSTALL_DATA_DIR
        where += fmt::format(" or in {}", PODSIM_INSTALL_DATA_DIR);
#endif
    } else {
        for (const auto& root : roots) add(root);
        where = fmt::format("looked in {}", fmt::join(places, ", "));
    }
    return where + "; set PODSIM_HOME to the directory that holds models/ and topologies/";
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
    d.error({"--topology", 0, 0}, "",
            unknown_reference_message(name_or_path, "topologies", known) + "; " +
                data_roots_hint(fs::current_path()));
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
