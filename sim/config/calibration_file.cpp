#include "config/load.hpp"

#include <fmt/format.h>

#include "config/parse.hpp"
#include "config/schema.hpp"
#include "config/yaml_reader.hpp"

namespace podsim::config {

namespace fs = std::filesystem;
using core::Diagnostics;
using core::Dimension;
using detail::MapReader;

namespace {

void apply_calibration_entries(const YAML::Node& node, const std::string& file, const std::string& path,
                               cost::Calibration& calibration, Diagnostics& d) {
    MapReader r(node, file, path, d, cost::calibration_parameter_names());
    if (!r.ok()) return;
    for (const auto& p : cost::calibration_parameters()) {
        std::string key(p.name);
        if (!r.has(key)) continue;
        std::optional<double> value = p.unit == cost::ParameterUnit::time
                                          ? r.quantity(key, Dimension::time, false)
                                          : r.number(key, false);
        if (!value) continue;
        if (*value < p.lower_bound || *value > p.upper_bound) {
            r.error(key, fmt::format("{:g} is outside [{:g}, {:g}]", *value, p.lower_bound, p.upper_bound));
            continue;
        }
        calibration.*(p.field) = *value;
    }
}

}  // namespace

cost::Calibration parse_calibration(const YAML::Node& node, const std::string& file, const std::string& path,
                                    const fs::path& base_dir, cost::Calibration calibration, Diagnostics& d) {
    if (node.IsScalar()) {
        fs::path p = base_dir / node.Scalar();
        Diagnostics local;
        YAML::Node root = detail::load_yaml_file(p.string(), local);
        if (!local.empty()) {
            d.error(detail::location_of(node, file), path,
                    fmt::format("cannot load calibration file {}", p.string()));
            d.append(local);
            return calibration;
        }
        MapReader r(root, p.string(), "", d, keys_under(calibration_file_schema(), ""));
        if (!r.ok()) return calibration;
        check_schema(r, "podsim.calibration/v1");
        if (r.has("parameters"))
            apply_calibration_entries(r.raw("parameters"), p.string(), "parameters", calibration, d);
        return calibration;
    }
    apply_calibration_entries(node, file, path, calibration, d);
    return calibration;
}

cost::Calibration load_calibration_file(const std::string& path, cost::Calibration base) {
    Diagnostics d;
    YAML::Node root = detail::load_yaml_file(path, d);
    if (d.empty()) {
        MapReader r(root, path, "", d, keys_under(calibration_file_schema(), ""));
        if (r.ok()) {
            check_schema(r, "podsim.calibration/v1");
            if (r.has("parameters"))
                apply_calibration_entries(r.raw("parameters"), path, "parameters", base, d);
        }
    }
    core::throw_if_errors(d);
    return base;
}

}  // namespace podsim::config
