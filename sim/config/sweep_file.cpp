#include "config/sweep_file.hpp"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <map>

#include <fmt/format.h>

#include "config/load.hpp"
#include "config/overrides.hpp"
#include "config/parse.hpp"
#include "config/run_keys.hpp"
#include "config/run_paths.hpp"
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
    // One tree that every instance writes its axis values into, when that leaves it as a fresh copy
    // of the base would be (reuses_tree): a copy per instance was a third of building it.
    bool reuses_tree = false;
    mutable YAML::Node tree;
    mutable std::vector<std::size_t> tree_choice;  // each axis's value in `tree`; empty before the first
};

namespace {

// Whether writing every axis's values into one tree, instance after instance, leaves it as a copy
// of the base with those values written would be: each instance then sets the same keys to the
// axis values themselves (not copies), and creates no node after the first (the tree's nodes live
// as long as it does). Not so when something writes inside a value an axis set: another axis (a
// path below another path, or a mesh shorthand turned into the long form each time), the
// instance's name, or the absolute path make() puts in place of a relative model, topology or
// calibration path; nor with both batch keys (each removes the other).
bool reusable_tree(const std::vector<Axis>& axes) {
    std::vector<std::string> paths;
    for (const auto& axis : axes) {
        for (std::size_t p = 0; p < axis.paths.size(); ++p) {
            paths.push_back(axis.paths[p]);
            const std::string& path = axis.paths[p];
            if (path != "model" && path != "topology" && path != "calibration") continue;
            for (const auto& row : axis.values) {
                const YAML::Node& value = row[p];
                if (!value.IsScalar()) continue;
                const std::string& text = value.Scalar();
                if (text.find('/') != std::string::npos || text.ends_with(".yaml")) return false;
            }
        }
    }
    bool global = false, per_chip = false;
    for (const auto& p : paths) {
        if (p == "name" || p.rfind("mesh.ici", 0) == 0 || p.rfind("mesh.dcn", 0) == 0) return false;
        global = global || p == "training.global_batch";
        per_chip = per_chip || p == "training.per_chip_batch";
        for (const auto& q : paths)
            if (&p != &q && (p == q || q.rfind(p + ".", 0) == 0)) return false;
    }
    return !(global && per_chip);
}

}  // namespace

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
std::vector<SweepPlan::AxisShape> SweepPlan::axis_shapes() const {
    std::vector<AxisShape> shapes;
    for (const Axis& axis : impl_->axes) shapes.push_back({axis.paths, axis.values.size()});
    return shapes;
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
    YAML::Node root = detail::load_yaml_file(path, d);
    core::throw_if_errors(d);
    fs::path dir = fs::path(path).parent_path();
    return load_tree(root, path, dir.empty() ? fs::path(".") : dir);
}

SweepPlan SweepPlan::load_text(const std::string& yaml_text, const std::string& name,
                               const fs::path& base_dir) {
    core::Diagnostics d;
    YAML::Node root = detail::load_yaml_string(yaml_text, name, d);
    core::throw_if_errors(d);
    return load_tree(root, name, base_dir);
}

SweepPlan SweepPlan::load_tree(const YAML::Node& root, const std::string& path, const fs::path& dir) {
    core::Diagnostics d;
    auto impl = std::make_unique<Impl>();
    impl->file = path;
    impl->name = fs::path(path).stem().string();
    MapReader r(root, path, "", d, keys_under(sweep_file_schema(), ""));
    if (!r.ok()) throw core::UserError(d);
    auto schema = r.string("schema", true);
    if (schema && *schema != "podsim.sweep/v1")
        r.error("schema", fmt::format("expected 'podsim.sweep/v1', found '{}'", *schema));
    impl->name = r.string("name", false).value_or(impl->name);

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
        auto error = detail::run_path_error(dotted);
        if (!error) return true;
        d.error(detail::location_of(key, path), where + "." + dotted, *error);
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
    // An axis into a model or topology the base names (model.layers on `model: gpt2-2b`) sets the
    // key among the named one's, as --set does, instead of replacing the whole model by that key.
    if (!impl->base.IsNull() && impl->base.IsMap()) {
        std::vector<std::string> paths;
        for (const auto& axis : impl->axes) paths.insert(paths.end(), axis.paths.begin(), axis.paths.end());
        detail::inline_named_sections(impl->base, paths, impl->base_dir);
    }
    // A value that is wrong whatever the other axes hold (`remat: ful`, `global_batch: -5`) is a
    // mistake in the sweep file, reported at the value; combinations that do not shard are skipped
    // rows. Each value is applied alone to the base, and an error the loader attaches to that value
    // node under the axis's own path is the value's own (errors of combinations are attached to
    // their section), unless it goes away beside the rest of its zip row or beside some value of
    // another axis: a check across two keys (`num_experts_per_tok` above `num_experts`, `heads`
    // not dividing `d_model`) then fails only some rows. A mesh is only valid together with its
    // slice, so mesh axes are left to the rows.
    if (d.empty()) {
        const core::SourceLocation inserted = detail::location_of(YAML::Clone(YAML::Node("x")), path);
        using Writes = std::vector<detail::PathWrite>;
        // The messages of the errors at `key` with `writes` applied to the base.
        auto value_errors = [&](const Writes& writes, const std::string& key) {
            YAML::Node tree = YAML::Clone(impl->base);
            (void)detail::set_paths(tree, writes, impl->base_dir);
            core::Diagnostics alone;
            try {
                (void)parse_run_node(tree, path, impl->base_dir, alone, impl->cache.get(),
                                     /*semantic_checks=*/false);
            } catch (const core::UserError& e) {
                alone.append(e.diagnostics());
            }
            std::vector<std::string> messages;
            for (const auto& item : alone.items()) {
                if (item.key_path == key && item.location.line == inserted.line &&
                    item.location.column == inserted.column) {
                    messages.push_back(item.message);
                }
            }
            return messages;
        };
        // Bounds the parses spent looking for a row that clears a value's error (a sweep of many
        // wrong values); past it the errors stand as the value's own.
        std::size_t context_parses_left = 10'000;
        for (std::size_t a = 0; a < impl->axes.size(); ++a) {
            const Axis& axis = impl->axes[a];
            for (const auto& row : axis.values) {
                for (std::size_t p = 0; p < axis.paths.size() && p < row.size(); ++p) {
                    if (axis.paths[p].rfind("mesh", 0) == 0) continue;
                    const std::string& key = axis.paths[p];
                    std::vector<std::string> messages = value_errors({{&key, &row[p]}}, key);
                    auto clears = [&](const Writes& writes) {
                        if (messages.empty() || context_parses_left == 0) return;
                        --context_parses_left;
                        const auto still = value_errors(writes, key);
                        std::erase_if(messages, [&](const std::string& m) {
                            return std::find(still.begin(), still.end(), m) == still.end();
                        });
                    };
                    Writes own;
                    for (std::size_t q = 0; q < axis.paths.size() && q < row.size(); ++q)
                        if (q != p) own.push_back({&axis.paths[q], &row[q]});
                    own.push_back({&key, &row[p]});  // written last: a zip row's own value wins
                    if (own.size() > 1) clears(own);
                    for (std::size_t b = 0; b < impl->axes.size() && !messages.empty(); ++b) {
                        if (b == a) continue;
                        const Axis& other = impl->axes[b];
                        for (const auto& other_row : other.values) {
                            Writes writes;
                            for (std::size_t q = 0; q < other.paths.size() && q < other_row.size(); ++q)
                                writes.push_back({&other.paths[q], &other_row[q]});
                            writes.insert(writes.end(), own.begin(), own.end());
                            clears(writes);
                            if (messages.empty()) break;
                        }
                    }
                    for (const auto& message : messages)
                        d.error(detail::location_of(row[p], path), "axes." + key, message);
                }
            }
        }
    }
    bool size_ok = true;
    for (auto& axis : impl->axes) {
        for (const auto& row : axis.values) {
            std::vector<std::string> shown;
            for (const auto& v : row) shown.push_back(flow(v));
            axis.shown.push_back(std::move(shown));
        }
        // Checked: 65 axes of two values wrapped the size to 0.
        if (size_ok && (__builtin_mul_overflow(impl->size, axis.values.size(), &impl->size) ||
                        impl->size > kMaxSweepConfigs)) {
            size_ok = false;
        }
        for (const auto& p : axis.paths) impl->names.push_back(p);
    }
    if (!size_ok) {
        double configs = 1.0;
        for (const auto& axis : impl->axes) configs *= static_cast<double>(axis.values.size());
        r.error("axes", fmt::format("the axes multiply to {:.4g} configs; a sweep has at most {} (narrow the "
                                    "axes, or split the sweep into several files)",
                                    configs, kMaxSweepConfigs));
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
    impl->reuses_tree = reusable_tree(impl->axes);
    if (impl->reuses_tree) impl->tree = YAML::Clone(impl->base);
    return SweepPlan(std::move(impl));
}

std::vector<std::size_t> SweepPlan::choices(std::size_t index) const {
    std::size_t rest = index;
    // Row-major: the first axis varies slowest, like nested loops in file order.
    std::vector<std::size_t> choice(impl_->axes.size());
    for (std::size_t a = impl_->axes.size(); a-- > 0;) {
        choice[a] = rest % impl_->axes[a].values.size();
        rest /= impl_->axes[a].values.size();
    }
    return choice;
}

std::vector<std::string> SweepPlan::values_of(std::size_t index) const {
    const auto choice = choices(index);
    std::vector<std::string> values;
    for (std::size_t a = 0; a < impl_->axes.size(); ++a) {
        for (const auto& v : impl_->axes[a].shown[choice[a]]) values.push_back(v);
    }
    return values;
}

std::string SweepPlan::fingerprint() const {
    // FNV-1a (64 bits) over the base as YAML and each axis's paths and values, with separators.
    std::uint64_t hash = 14695981039346656037ULL;
    auto add = [&](const std::string& text) {
        for (unsigned char c : text) hash = (hash ^ c) * 1099511628211ULL;
        hash = (hash ^ 0xffU) * 1099511628211ULL;
    };
    YAML::Emitter base;
    base << impl_->base;
    add(base.c_str());
    for (const auto& axis : impl_->axes) {
        for (const auto& p : axis.paths) add(p);
        for (const auto& row : axis.shown) {
            for (const auto& v : row) add(v);
        }
        add("|");
    }
    return fmt::format("{:016x}", hash);
}

SweepPlan::Instance SweepPlan::make(std::size_t index, bool with_run_yaml) const {
    return make_instance(index, choices(index), with_run_yaml, nullptr);
}

SweepPlan::Instance SweepPlan::make_beside(std::size_t index, std::size_t neighbour_index,
                                           const Instance& neighbour) const {
    const auto choice = choices(index), neighbour_choice = choices(neighbour_index);
    bool only_batch = neighbour.ok;
    for (std::size_t a = 0; a < impl_->axes.size() && only_batch; ++a) {
        if (choice[a] == neighbour_choice[a]) continue;
        for (const auto& path : impl_->axes[a].paths) only_batch = only_batch && sets_batch(path);
    }
    return make_instance(index, choice, false, only_batch ? &neighbour.spec : nullptr);
}

SweepPlan::Instance SweepPlan::make_instance(std::size_t index, const std::vector<std::size_t>& choice,
                                             bool with_run_yaml, const RunSpec* batch_neighbour) const {
    Instance instance;
    YAML::Node tree = impl_->reuses_tree ? impl_->tree : YAML::Clone(impl_->base);
    // The shared tree holds the values of the instance made before (tree_choice): an axis whose
    // value has not changed is set already.
    std::vector<std::size_t> tree_choice;
    if (impl_->reuses_tree) tree_choice.swap(impl_->tree_choice);
    // A tree of its own may take a whole model and a key inside it (detail::set_paths); the shared
    // tree's axes write no key inside another's (reusable_tree).
    std::vector<detail::PathWrite> writes;
    for (std::size_t a = 0; a < impl_->axes.size(); ++a) {
        const Axis& axis = impl_->axes[a];
        const bool set = tree_choice.empty() || tree_choice[a] != choice[a];
        for (std::size_t p = 0; p < axis.paths.size(); ++p) {
            if (impl_->reuses_tree) {
                if (set) detail::set_path(tree, axis.paths[p], axis.values[choice[a]][p], true);
            } else {
                writes.push_back({&axis.paths[p], &axis.values[choice[a]][p]});
            }
            instance.values.push_back(axis.shown[choice[a]][p]);
        }
    }
    if (!writes.empty()) (void)detail::set_paths(tree, writes, impl_->base_dir);
    tree["name"] = fmt::format("{}[{}]", impl_->name, index);
    // Paths in the written config must not depend on where it is written. (The shared tree keeps
    // them: its axes set no paths there, reusable_tree.)
    for (const char* key : {"model", "topology", "calibration"}) {
        if (impl_->reuses_tree && !tree_choice.empty()) break;
        const YAML::Node& const_tree = tree;
        YAML::Node ref = const_tree[key];
        if (!ref.IsDefined() || !ref.IsScalar()) continue;
        std::string value = ref.Scalar();
        bool is_path = value.find('/') != std::string::npos || value.ends_with(".yaml");
        if (is_path && !fs::path(value).is_absolute()) {
            tree[key] = fs::weakly_canonical(impl_->base_dir / value).string();
        }
    }
    if (impl_->reuses_tree) impl_->tree_choice = choice;
    if (with_run_yaml) {
        YAML::Emitter out;
        out << tree;
        instance.run_yaml = out.c_str();
    }
    core::Diagnostics d;
    std::string file = fmt::format("{}[{}]", impl_->file, index);
    try {
        instance.spec = batch_neighbour ? reparse_batch(tree, file, *batch_neighbour, d)
                                        : parse_run_node(tree, file, impl_->base_dir, d, impl_->cache.get());
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
