#include "config/load.hpp"

#include <fmt/format.h>

#include "config/parse.hpp"
#include "config/run_keys.hpp"
#include "config/schema.hpp"
#include "config/yaml_reader.hpp"

namespace podsim::config {

namespace fs = std::filesystem;
using core::Diagnostics;
using core::Dimension;
using core::find_key;
using detail::MapReader;

std::vector<ValidationCase> load_validation_suite(const std::string& directory) {
    Diagnostics d;
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(directory, ec)) {
        if (entry.path().extension() == ".yaml") files.push_back(entry.path());
    }
    if (ec) {
        d.error({directory, 0, 0}, "", "cannot read the directory: " + ec.message());
        throw core::UserError(d);
    }
    std::sort(files.begin(), files.end());
    std::vector<ValidationCase> cases;
    for (const auto& f : files) {
        const std::string file = f.string();
        YAML::Node root = detail::load_yaml_file(file, d);
        if (!root.IsDefined() || root.IsNull()) continue;
        MapReader r(root, file, "", d, keys_under(validation_case_schema(), ""));
        if (!r.ok()) continue;
        check_schema(r, "podsim.validation/v1");
        ValidationCase c;
        c.file = file;
        c.id = r.string("id", true).value_or(f.stem().string());
        c.source = r.string("source", true).value_or("");
        c.notes = r.string("notes", false).value_or("");
        c.expected_miss = r.string("expected_miss", false);
        if (r.has("run")) {
            c.run = parse_run(r.raw("run"), file, f.parent_path(), "run", d);
        } else {
            r.error("run", "missing required key");
        }
        if (auto profile = r.string("profile", false)) {
            if (profile->empty() || profile->front() == '/') {
                r.error("profile", "expected a path relative to the case");
            } else {
                c.profile = (f.parent_path() / *profile).string();
                const std::string profile_file = c.profile.substr(0, c.profile.rfind('#'));
                std::error_code exists;
                if (!fs::is_regular_file(profile_file, exists))
                    r.error("profile", "no such file: " + profile_file);
            }
        }
        for (const std::string key : {"measured", "tolerance"}) {
            auto& out = key == "measured" ? c.measured : c.tolerance;
            if (key == "measured" && !r.has(key) && !c.profile.empty()) continue;
            if (!r.has(key)) {
                r.error(key, "missing required key");
                continue;
            }
            YAML::Node node = r.raw(key);
            if (!node.IsMap()) {
                r.error(key, "expected a mapping of names to numbers");
                continue;
            }
            std::vector<std::string> names;
            for (auto it = node.begin(); it != node.end(); ++it)
                names.push_back(it->first.as<std::string>(""));
            MapReader values(node, file, key, d, names);
            for (const auto& name : names) {
                if (name == "derived") {
                    c.derived = values.boolean(name).value_or(false);
                    continue;
                }
                if (auto v = values.number(name, true)) out[name] = *v;
            }
        }
        cases.push_back(std::move(c));
    }
    core::throw_if_errors(d);
    return cases;
}

std::vector<CollectiveCase> load_collective_suite(const std::string& directory) {
    Diagnostics d;
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(directory, ec)) {
        if (entry.path().extension() == ".yaml") files.push_back(entry.path());
    }
    std::sort(files.begin(), files.end());
    std::vector<CollectiveCase> cases;
    for (const auto& f : files) {
        const std::string file = f.string();
        YAML::Node root = detail::load_yaml_file(file, d);
        if (!root.IsDefined() || root.IsNull()) continue;
        MapReader r(root, file, "", d, keys_under(collective_case_schema(), ""));
        if (!r.ok()) continue;
        check_schema(r, "podsim.collective-validation/v1");
        CollectiveCase c;
        c.file = file;
        c.id = r.string("id", true).value_or(f.stem().string());
        c.source = r.string("source", true).value_or("");
        c.setup = r.string("setup", false).value_or("");
        c.expected_miss = r.string("expected_miss", false);
        c.op = r.string("op", true).value_or("");
        if (r.has("topology")) {
            if (auto p = resolve_reference(r, "topology", "topologies", f.parent_path())) {
                Diagnostics local;
                YAML::Node t = detail::load_yaml_file(p->string(), local);
                if (local.empty()) c.topology = parse_topology(t, p->string(), "", local);
                d.append(local);
            }
        } else {
            r.error("topology", "missing required key");
        }
        if (auto s = r.string("slice", true)) {
            if (auto shape = hardware::parse_slice_shape(*s)) {
                if (r.check_bounds(find_key(kCollectiveCaseKeys, "slice"),
                                   static_cast<double>(shape->chips())))
                    c.slice = hardware::normalized_slice(c.topology, *shape);
            } else {
                r.error("slice", fmt::format("'{}' is not a slice shape", *s));
            }
        }
        if (auto m = r.string("mesh", true)) {
            if (auto axes = network::parse_axis_list(*m)) {
                c.mesh.ici = *axes;
            } else {
                r.error("mesh", fmt::format("'{}' is not name=size,...", *m));
            }
        }
        if (auto a = r.string("axis", true)) c.axes = {*a};
        if (r.has("pod_viewer")) {
            c.pod_viewer = (f.parent_path() / r.string("pod_viewer", true).value_or("")).string();
        } else {
            c.bytes = r.quantity(find_key(kCollectiveCaseKeys, "bytes"), true).value_or(0);
            if (r.has("measured")) {
                MapReader m(r.raw("measured"), file, "measured", d,
                            keys_under(collective_case_schema(), "measured"));
                c.measured_time = m.quantity(find_key(kCollectiveCaseKeys, "measured.time")).value_or(0);
            } else {
                r.error("measured", "missing required key");
            }
        }
        if (r.has("tolerance")) {
            MapReader t(r.raw("tolerance"), file, "tolerance", d,
                        keys_under(collective_case_schema(), "tolerance"));
            c.tolerance_rel = t.number(find_key(kCollectiveCaseKeys, "tolerance.rel")).value_or(0);
            c.tolerance_abs = t.quantity(find_key(kCollectiveCaseKeys, "tolerance.abs")).value_or(0);
            c.tolerance_median_rel =
                t.number(find_key(kCollectiveCaseKeys, "tolerance.median_rel")).value_or(0);
        } else {
            r.error("tolerance", "missing required key");
        }
        cases.push_back(std::move(c));
    }
    core::throw_if_errors(d);
    return cases;
}

}  // namespace podsim::config
