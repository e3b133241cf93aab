#include "config/overrides.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "config/load.hpp"
#include "config/parse.hpp"
#include "config/run_paths.hpp"
#include "config/schema.hpp"
#include "config/yaml_reader.hpp"
#include "core/suggest.hpp"

namespace podsim::config {

namespace fs = std::filesystem;

namespace detail {

namespace {

bool known_path(const std::string& path) {
    for (const auto& k : run_schema()) {
        if (k.path == path) return true;
    }
    // Below mesh.ici / mesh.dcn / calibration anything goes (axis or parameter names).
    for (const char* open :
         {"mesh.ici.", "mesh.dcn.", "mesh.mapping.", "calibration.", "model.", "topology."}) {
        if (path.rfind(open, 0) == 0) return true;
    }
    // mesh.<axis>: an axis of the shorthand mesh {fsdp: 4} (the mesh reader names a misspelt one).
    return path.rfind("mesh.", 0) == 0 && path.find('.', 5) == std::string::npos && path.size() > 5;
}

}  // namespace

std::optional<std::string> run_path_error(const std::string& dotted) {
    if (known_path(dotted)) return std::nullopt;
    std::vector<std::string> paths;
    for (const auto& k : run_schema()) paths.emplace_back(k.path);
    std::string message = fmt::format("'{}' is not a key of a run config", dotted);
    if (auto hint = core::closest_match(dotted, paths))
        message += fmt::format(" (did you mean '{}'?)", *hint);
    return message;
}

void set_path(YAML::Node root, const std::string& path, const YAML::Node& value, bool share_value) {
    std::vector<std::string> keys;
    std::size_t start = 0;
    while (true) {
        std::size_t dot = path.find('.', start);
        keys.push_back(path.substr(start, dot - start));
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    if (keys.size() == 2 && keys[0] == "mesh" && keys[1] != "ici" && keys[1] != "dcn" &&
        keys[1] != "mapping") {
        // An axis of the shorthand: into mesh.ici when the mesh is written in the long form.
        const YAML::Node& const_root = root;
        const YAML::Node mesh = const_root["mesh"];
        if (mesh.IsMap() && (mesh["ici"].IsDefined() || mesh["dcn"].IsDefined()))
            keys.insert(keys.begin() + 1, "ici");
    }
    if (keys.size() >= 2 && keys[0] == "mesh" && (keys[1] == "ici" || keys[1] == "dcn")) {
        const YAML::Node& mesh_const = root;
        YAML::Node mesh = mesh_const["mesh"];
        if (!mesh.IsDefined() || !mesh.IsMap() || (!mesh["ici"].IsDefined() && !mesh["dcn"].IsDefined())) {
            YAML::Node long_form(YAML::NodeType::Map);
            if (mesh.IsDefined() && mesh.IsMap()) long_form["ici"] = mesh;
            root["mesh"] = long_form;
        }
    }
    if (sets_batch(path)) {
        YAML::Node training = root["training"];
        if (training.IsMap())
            training.remove(path == "training.global_batch" ? "per_chip_batch" : "global_batch");
    }
    YAML::Node node = root;
    for (std::size_t i = 0; i + 1 < keys.size(); ++i) {
        YAML::Node child = node[keys[i]];
        if (!child.IsMap()) {
            node[keys[i]] = YAML::Node(YAML::NodeType::Map);
            child = node[keys[i]];
        }
        node.reset(child);
    }
    node[keys.back()] = share_value ? value : YAML::Clone(value);
}

std::vector<std::pair<std::string, std::string>> inline_named_sections(YAML::Node run,
                                                                       const std::vector<std::string>& paths,
                                                                       const fs::path& base_dir) {
    std::vector<std::pair<std::string, std::string>> inlined;
    for (const char* section : {"model", "topology"}) {
        const std::string inside = std::string(section) + ".";
        const bool sets_inside = std::any_of(paths.begin(), paths.end(),
                                             [&](const std::string& p) { return p.rfind(inside, 0) == 0; });
        const YAML::Node& const_run = run;
        const YAML::Node reference = const_run[section];
        if (!sets_inside || !reference.IsScalar()) continue;
        const bool is_model = std::string_view(section) == "model";
        auto named_file = find_reference(reference.Scalar(), is_model ? "models" : "topologies", base_dir);
        if (!named_file) continue;  // the reference's own mistake is reported when the config is read
        core::Diagnostics local;
        YAML::Node named = load_yaml_file(named_file->string(), local);
        if (!local.empty() || !named.IsMap()) continue;
        run[section] = named;
        inlined.emplace_back(section, named_file->string());
    }
    return inlined;
}

std::vector<std::pair<std::string, std::string>> set_paths(YAML::Node root,
                                                           const std::vector<PathWrite>& writes,
                                                           const fs::path& base_dir) {
    auto whole_section = [](const std::string& path) { return path == "model" || path == "topology"; };
    std::vector<std::string> paths;
    for (const auto& w : writes) {
        paths.push_back(*w.path);
        if (whole_section(*w.path)) set_path(root, *w.path, *w.value);
    }
    auto inlined = inline_named_sections(root, paths, base_dir);
    for (const auto& w : writes)
        if (!whole_section(*w.path)) set_path(root, *w.path, *w.value);
    return inlined;
}

}  // namespace detail

bool sets_batch(std::string_view path) {
    return path == "training.global_batch" || path == "training.per_chip_batch";
}

Override parse_override(const std::string& assignment, const std::string& origin_prefix) {
    auto eq = assignment.find('=');
    if (eq == std::string::npos || eq == 0) {
        core::Diagnostics d;
        d.error({origin_prefix + assignment, 0, 0}, "",
                "expected key.path=value (e.g. training.global_batch=256)");
        throw core::UserError(d);
    }
    return {assignment.substr(0, eq), assignment.substr(eq + 1), origin_prefix + assignment};
}

namespace {

bool below(const std::string& key_path, const std::string& path) {
    return key_path == path || key_path.rfind(path + ".", 0) == 0;
}

// Applies the overrides to `run` (the run config tree), parses it and throws every mistake.
RunSpec parse_with_overrides(YAML::Node run, const std::string& file, const fs::path& base_dir,
                             const std::vector<Override>& overrides, const std::string& prefix) {
    core::Diagnostics d;
    if (!run.IsMap()) {
        d.error(detail::location_of(run, file), prefix, "expected a run config (a mapping)");
        throw core::UserError(d);
    }
    std::vector<YAML::Node> values(overrides.size());
    std::vector<detail::PathWrite> writes;
    for (std::size_t i = 0; i < overrides.size(); ++i) {
        const auto& o = overrides[i];
        if (auto error = detail::run_path_error(o.path)) {
            d.error({o.origin, 0, 0}, o.path, *error);
            continue;
        }
        try {
            values[i] = YAML::Load(o.value);
        } catch (const YAML::Exception& e) {
            d.error({o.origin, 0, 0}, o.path, fmt::format("cannot read the value as YAML: {}", e.msg));
            continue;
        }
        writes.push_back({&o.path, &values[i]});
    }
    const auto inlined = detail::set_paths(run, writes, base_dir);
    core::Diagnostics parsed;
    RunSpec spec = parse_run(run, file, base_dir, prefix, parsed);
    // A value an override brought in is the override's mistake, not the file's; one in a model or
    // topology written in place of its name is at its line in that file.
    for (const auto& item : parsed.items()) {
        core::SourceLocation location = item.location;
        for (const auto& [section, named_file] : inlined)
            if (location.file == file &&
                below(item.key_path, prefix.empty() ? section : prefix + "." + section))
                location.file = named_file;
        for (const auto& o : overrides) {
            if (below(item.key_path, prefix.empty() ? o.path : prefix + "." + o.path))
                location = {o.origin, 0, 0};
        }
        d.error(location, item.key_path, item.message);
    }
    core::throw_if_errors(d);
    return spec;
}

}  // namespace

RunSpec load_run_file(const std::string& path, const std::vector<Override>& overrides) {
    if (overrides.empty()) return load_run_file(path);
    core::Diagnostics d;
    YAML::Node root = detail::load_yaml_file(path, d);
    core::throw_if_errors(d);
    fs::path base = fs::path(path).parent_path();
    if (base.empty()) base = ".";
    // A published case runs as its `run:` block, as load_run_file does it.
    if (root.IsMap() && root["schema"].IsScalar() && root["schema"].Scalar() == "podsim.validation/v1" &&
        root["run"].IsMap()) {
        return parse_with_overrides(root["run"], path, base, overrides, "run");
    }
    return parse_with_overrides(root, path, base, overrides, "");
}

RunSpec load_run_text(const std::string& yaml_text, const std::string& name, const fs::path& base_dir,
                      const std::vector<Override>& overrides) {
    if (overrides.empty()) return load_run_text(yaml_text, name, base_dir);
    core::Diagnostics d;
    YAML::Node root = detail::load_yaml_string(yaml_text, name, d);
    core::throw_if_errors(d);
    return parse_with_overrides(root, name, base_dir, overrides, "");
}

}  // namespace podsim::config
