#include "config/sweep_file.hpp"

#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "config/load.hpp"
#include "config/parse.hpp"
#include "config/run_keys.hpp"
#include "config/schema.hpp"
#include "config/yaml_reader.hpp"
#include "core/suggest.hpp"

namespace podsim::config {

namespace fs = std::filesystem;
using detail::MapReader;

namespace {

struct Axis {
    std::vector<std::string> paths;               // one, or several for a zip group
    std::vector<std::vector<YAML::Node>> values;  // values[i][path]
    std::vector<std::vector<std::string>> shown;  // the same as flow YAML, for results
};

std::string flow(const YAML::Node& node) {
    YAML::Emitter out;
    out.SetMapFormat(YAML::Flow);
    out.SetSeqFormat(YAML::Flow);
    out << node;
    return out.c_str();
}

// Top-level keys of the run schema and their children, for checking dotted paths.
bool known_path(const std::string& path) {
    for (const auto& k : run_schema()) {
        if (k.path == path) return true;
    }
    // Below mesh.ici / mesh.dcn / calibration anything goes (axis or parameter names).
    for (const char* open :
         {"mesh.ici.", "mesh.dcn.", "mesh.mapping.", "calibration.", "model.", "topology."}) {
        if (path.rfind(open, 0) == 0) return true;
    }
    return false;
}

std::vector<std::string> all_paths() {
    std::vector<std::string> out;
    for (const auto& k : run_schema()) out.emplace_back(k.path);
    return out;
}

void set_path(YAML::Node root, const std::string& path, const YAML::Node& value) {
    std::vector<std::string> keys;
    std::size_t start = 0;
    while (true) {
        std::size_t dot = path.find('.', start);
        keys.push_back(path.substr(start, dot - start));
        if (dot == std::string::npos) break;
        start = dot + 1;
    }
    // Conveniences: setting mesh.ici on a shorthand mesh replaces it by the long form; setting one
    // of global_batch / per_chip_batch drops the other.
    if (keys.size() >= 2 && keys[0] == "mesh" && (keys[1] == "ici" || keys[1] == "dcn")) {
        const YAML::Node& mesh_const = root;
        YAML::Node mesh = mesh_const["mesh"];
        if (!mesh.IsDefined() || !mesh.IsMap() || (!mesh["ici"].IsDefined() && !mesh["dcn"].IsDefined())) {
            YAML::Node long_form(YAML::NodeType::Map);
            if (mesh.IsDefined() && mesh.IsMap()) long_form["ici"] = mesh;
            root["mesh"] = long_form;
        }
    }
    if (path == "training.global_batch" || path == "training.per_chip_batch") {
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
    node[keys.back()] = YAML::Clone(value);
}

}  // namespace

struct SweepPlan::Impl {
    std::string file;
    std::string name;
    std::string base_file;
    fs::path base_dir;
    YAML::Node base;
    std::vector<Axis> axes;
    std::vector<std::string> names;
    std::vector<Expression> keep;
    Expression sort{std::string(core::find_key(kSweepFileKeys, "sort").default_string), {}};
    std::size_t size = 1;
    std::shared_ptr<LoadCache> cache = make_load_cache();
};

SweepPlan::SweepPlan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
SweepPlan::SweepPlan(SweepPlan&&) noexcept = default;
SweepPlan& SweepPlan::operator=(SweepPlan&&) noexcept = default;
SweepPlan::~SweepPlan() = default;

std::size_t SweepPlan::size() const {
    return impl_->size;
}
const std::vector<std::string>& SweepPlan::parameter_names() const {
    return impl_->names;
}
const std::vector<SweepPlan::Expression>& SweepPlan::keep() const {
    return impl_->keep;
}
const SweepPlan::Expression& SweepPlan::sort() const {
    return impl_->sort;
}
const std::string& SweepPlan::file() const {
    return impl_->file;
}
const std::string& SweepPlan::name() const {
    return impl_->name;
}

SweepPlan SweepPlan::load(const std::string& path) {
    core::Diagnostics d;
    auto impl = std::make_unique<Impl>();
    impl->file = path;
    impl->name = fs::path(path).stem().string();
    YAML::Node root = detail::load_yaml_file(path, d);
    core::throw_if_errors(d);
    MapReader r(root, path, "", d, keys_under(sweep_file_schema(), ""));
    if (!r.ok()) throw core::UserError(d);
    auto schema = r.string("schema", true);
    if (schema && *schema != "podsim.sweep/v1")
        r.error("schema", fmt::format("expected 'podsim.sweep/v1', found '{}'", *schema));
    impl->name = r.string("name", false).value_or(impl->name);
    fs::path dir = fs::path(path).parent_path();
    if (dir.empty()) dir = ".";

    // base: a path to a run config, or an inline one.
    if (!r.has("base")) {
        r.error("base", "missing required key");
    } else if (r.raw("base").IsMap()) {
        impl->base = YAML::Clone(r.raw("base"));
        impl->base_file = path;
        impl->base_dir = dir;
    } else if (auto b = r.string("base", true)) {
        fs::path p = fs::path(*b).is_absolute() ? fs::path(*b) : dir / *b;
        core::Diagnostics local;
        YAML::Node base = detail::load_yaml_file(p.string(), local);
        if (!local.empty()) {
            r.error("base", fmt::format("cannot load the base config {}", p.string()));
            d.append(local);
        } else {
            impl->base = base;
            impl->base_file = p.string();
            impl->base_dir = p.parent_path();
        }
    }

    auto add_values = [&](const YAML::Node& list, const std::string& key_path, Axis& axis) -> std::size_t {
        if (!list.IsSequence() || list.size() == 0) {
            d.error(detail::location_of(list, path), key_path, "expected a non-empty list of values");
            return 0;
        }
        if (axis.values.size() < list.size()) axis.values.resize(list.size());
        for (std::size_t i = 0; i < list.size(); ++i) axis.values[i].push_back(list[i]);
        return list.size();
    };
    auto check_path = [&](const YAML::Node& key, const std::string& dotted, const std::string& where) {
        if (known_path(dotted)) return true;
        std::string message = fmt::format("'{}' is not a key of a run config", dotted);
        if (auto hint = core::closest_match(dotted, all_paths()))
            message += fmt::format(" (did you mean '{}'?)", *hint);
        d.error(detail::location_of(key, path), where + "." + dotted, message);
        return false;
    };
    if (r.has("axes")) {
        YAML::Node axes = r.raw("axes");
        if (!axes.IsMap()) {
            r.error("axes", "expected a mapping of dotted paths to lists of values");
        } else {
            for (auto it = axes.begin(); it != axes.end(); ++it) {
                std::string dotted = it->first.as<std::string>("");
                if (!check_path(it->first, dotted, "axes")) continue;
                Axis axis;
                axis.paths = {dotted};
                if (add_values(it->second, "axes." + dotted, axis) == 0) continue;
                impl->axes.push_back(std::move(axis));
            }
        }
    }
    if (r.has("zip")) {
        YAML::Node zip_node = r.raw("zip");
        std::vector<YAML::Node> zips;
        if (zip_node.IsSequence()) {
            for (const auto& z : zip_node) zips.push_back(z);
        } else {
            zips.push_back(zip_node);
        }
        for (std::size_t z = 0; z < zips.size(); ++z) {
            const YAML::Node& group = zips[z];
            std::string where = fmt::format("zip[{}]", z);
            if (!group.IsMap()) {
                d.error(detail::location_of(group, path), where,
                        "expected a mapping of dotted paths to equal-length lists");
                continue;
            }
            Axis axis;
            std::size_t length = 0;
            bool ok = true;
            for (auto it = group.begin(); it != group.end(); ++it) {
                std::string dotted = it->first.as<std::string>("");
                if (!check_path(it->first, dotted, where)) {
                    ok = false;
                    continue;
                }
                std::size_t n = add_values(it->second, where + "." + dotted, axis);
                if (length != 0 && n != length) {
                    d.error(detail::location_of(it->second, path), where + "." + dotted,
                            fmt::format("has {} values but the other lists of this zip have {}", n, length));
                    ok = false;
                }
                length = std::max(length, n);
                axis.paths.push_back(dotted);
            }
            if (ok && length > 0) impl->axes.push_back(std::move(axis));
        }
    }
    for (auto& axis : impl->axes) {
        for (const auto& row : axis.values) {
            std::vector<std::string> shown;
            for (const auto& v : row) shown.push_back(flow(v));
            axis.shown.push_back(std::move(shown));
        }
        impl->size *= axis.values.size();
        for (const auto& p : axis.paths) impl->names.push_back(p);
    }
    if (r.has("keep")) {
        YAML::Node keep = r.raw("keep");
        std::vector<YAML::Node> items;
        if (keep.IsSequence()) {
            for (const auto& k : keep) items.push_back(k);
        } else {
            items.push_back(keep);
        }
        for (const auto& k : items) {
            if (!k.IsScalar()) {
                d.error(detail::location_of(k, path), "keep",
                        "expected an expression such as 'fits' or 'mfu > 0.4'");
                continue;
            }
            impl->keep.push_back({k.Scalar(), detail::location_of(k, path)});
        }
    }
    if (auto s = r.string("sort", false)) impl->sort = {*s, r.location("sort")};
    core::throw_if_errors(d);
    return SweepPlan(std::move(impl));
}

SweepPlan::Instance SweepPlan::make(std::size_t index, bool with_run_yaml) const {
    Instance instance;
    YAML::Node tree = YAML::Clone(impl_->base);
    std::size_t rest = index;
    // Row-major: the first axis varies slowest, like nested loops in file order.
    std::vector<std::size_t> choice(impl_->axes.size());
    for (std::size_t a = impl_->axes.size(); a-- > 0;) {
        choice[a] = rest % impl_->axes[a].values.size();
        rest /= impl_->axes[a].values.size();
    }
    for (std::size_t a = 0; a < impl_->axes.size(); ++a) {
        const Axis& axis = impl_->axes[a];
        for (std::size_t p = 0; p < axis.paths.size(); ++p) {
            const YAML::Node& value = axis.values[choice[a]][p];
            set_path(tree, axis.paths[p], value);
            instance.values.push_back(axis.shown[choice[a]][p]);
        }
    }
    tree["name"] = fmt::format("{}[{}]", impl_->name, index);
    // Paths in the written config must not depend on where it is written.
    for (const char* key : {"model", "topology", "calibration"}) {
        const YAML::Node& const_tree = tree;
        YAML::Node ref = const_tree[key];
        if (!ref.IsDefined() || !ref.IsScalar()) continue;
        std::string value = ref.Scalar();
        bool is_path = value.find('/') != std::string::npos || value.ends_with(".yaml");
        if (is_path && !fs::path(value).is_absolute()) {
            tree[key] = fs::weakly_canonical(impl_->base_dir / value).string();
        }
    }
    if (with_run_yaml) {
        YAML::Emitter out;
        out << tree;
        instance.run_yaml = out.c_str();
    }
    core::Diagnostics d;
    std::string file = fmt::format("{}[{}]", impl_->file, index);
    try {
        instance.spec = parse_run_node(tree, file, impl_->base_dir, d, impl_->cache.get());
    } catch (const core::UserError& e) {
        d.append(e.diagnostics());
    }
    if (d.empty()) {
        instance.ok = true;
    } else {
        for (const auto& item : d.items()) {
            if (!instance.skip_reason.empty()) instance.skip_reason += "; ";
            instance.skip_reason +=
                item.key_path.empty() ? item.message : item.key_path + ": " + item.message;
        }
    }
    return instance;
}

}  // namespace podsim::config
