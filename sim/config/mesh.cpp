
#include <algorithm>
#include <limits>
#include <string_view>

#include <fmt/format.h>

#include "config/parse.hpp"
#include "config/run_keys.hpp"
#include "config/schema.hpp"
#include "config/yaml_reader.hpp"
#include "core/suggest.hpp"
#include "parallel/parallelism.hpp"

namespace podsim::config {

namespace fs = std::filesystem;
using core::Diagnostics;
using core::Dimension;
using detail::MapReader;

namespace {

struct AxisEntry {
    std::string name;
    std::optional<int> size;  // nullopt = auto
    core::SourceLocation location;
    std::string key_path;  // as the file spells it: mesh.dcn.data, mesh.dcn_data_parallelism
};

// The axes of one level; an axis that is misspelt or has a wrong size is reported and left out
// (then the product of the others says nothing: `broken` tells the caller not to check it).
std::vector<AxisEntry> parse_axes(const YAML::Node& node, const std::string& file, const std::string& path,
                                  Diagnostics& d, bool& broken) {
    std::vector<AxisEntry> axes;
    const std::size_t errors_before = d.size();
    if (node.IsNull() || !node.IsDefined()) return axes;
    if (!node.IsMap()) {
        d.error(detail::location_of(node, file), path,
                "expected a mapping of axis names to sizes, e.g. {fsdp: 4}");
        return axes;
    }
    for (auto it = node.begin(); it != node.end(); ++it) {
        std::string name = it->first.IsScalar() ? it->first.Scalar() : "";
        std::string key_path = path + "." + name;
        if (parallel::parallelism_named(name) == nullptr) {
            std::string message =
                fmt::format("unknown mesh axis '{}': axes are {}", name, parallel::axis_names_text());
            if (auto hint = core::closest_match(name, parallel::axis_names()))
                message += fmt::format(" (did you mean '{}'?)", *hint);
            d.error(detail::location_of(it->first, file), key_path, message);
            continue;
        }
        for (const auto& seen : axes) {
            if (seen.name == name)
                d.error(detail::location_of(it->first, file), key_path, "axis given twice");
        }
        AxisEntry entry{name, std::nullopt, detail::location_of(it->second, file), key_path};
        if (it->second.IsScalar() && it->second.Scalar() == "auto") {
            axes.push_back(entry);
            continue;
        }
        auto size =
            detail::read_integer(it->second, file, key_path, std::numeric_limits<long long>::min(), d);
        if (!size) continue;
        if (auto why = run_key("mesh.<axis>").bounds_error(static_cast<double>(*size)); !why.empty()) {
            d.error(detail::location_of(it->second, file), key_path, why);
            continue;
        }
        entry.size = static_cast<int>(*size);
        axes.push_back(entry);
    }
    broken = broken || d.size() > errors_before;
    return axes;
}

// MaxText's form of a mesh (configs/base.yml): ici_<x>_parallelism and dcn_<x>_parallelism keys,
// -1 for auto, and custom_mesh; the axes in MaxText's mesh_axes order (the last the most local).
// A wrong key or size marks its level broken, as parse_axes does.
void parse_maxtext_mesh(const YAML::Node& node, const std::string& file, std::vector<AxisEntry>& ici,
                        std::vector<AxisEntry>& dcn, std::string& custom, Diagnostics& d, bool& ici_broken,
                        bool& dcn_broken) {
    std::vector<std::pair<int, AxisEntry>> ici_ranked, dcn_ranked;
    for (auto it = node.begin(); it != node.end(); ++it) {
        const std::string key = it->first.IsScalar() ? it->first.Scalar() : "";
        const std::string key_path = "mesh." + key;
        if (key == "custom_mesh") {
            custom = it->second.IsScalar() ? it->second.Scalar() : "";
            continue;
        }
        bool is_dcn = false;
        const parallel::ParallelismKind* kind = parallel::parallelism_of_maxtext_key(key, &is_dcn);
        if (kind == nullptr) {
            std::string message = fmt::format(
                "unknown MaxText mesh key '{}': keys are ici_<axis>_parallelism and "
                "dcn_<axis>_parallelism for the axes {}, and custom_mesh",
                key, parallel::axis_names_text());
            auto keys = parallel::maxtext_keys();
            keys.emplace_back("custom_mesh");
            if (auto hint = core::closest_match(key, keys))
                message += fmt::format(" (did you mean '{}'?)", *hint);
            d.error(detail::location_of(it->first, file), key_path, message);
            (key.rfind("dcn", 0) == 0 ? dcn_broken : ici_broken) = true;
            continue;
        }
        AxisEntry entry{std::string(kind->name), std::nullopt, detail::location_of(it->second, file),
                        key_path};
        bool& broken = is_dcn ? dcn_broken : ici_broken;
        auto size =
            detail::read_integer(it->second, file, key_path, std::numeric_limits<long long>::min(), d);
        if (!size) {
            broken = true;
            continue;
        }
        if (*size != -1) {
            if (auto why = run_key("mesh.<axis>").bounds_error(static_cast<double>(*size)); !why.empty()) {
                d.error(detail::location_of(it->second, file), key_path, why + " (or -1 for auto)");
                broken = true;
                continue;
            }
            entry.size = static_cast<int>(*size);
        }
        (is_dcn ? dcn_ranked : ici_ranked).emplace_back(kind->maxtext_rank, entry);
    }
    for (auto* ranked : {&ici_ranked, &dcn_ranked}) {
        std::stable_sort(ranked->begin(), ranked->end(),
                         [](const auto& a, const auto& b) { return a.first < b.first; });
        for (auto& ranked_entry : *ranked) (ranked == &ici_ranked ? ici : dcn).push_back(ranked_entry.second);
    }
}

void check_custom_mesh(const std::string& custom, const core::SourceLocation& where, Diagnostics& d) {
    if (custom.empty()) return;
    const auto& choices = kCustomMeshNames;
    if (std::find(choices.begin(), choices.end(), custom) == choices.end())
        d.error(
            where, "mesh.custom_mesh",
            fmt::format("'{}' is not a MaxText custom mesh: hybrid_ring_64x4 or hybrid_ring_32x8", custom));
}

// "1 chip", "4 chips".
std::string plural(long count, std::string_view noun) {
    return fmt::format("{} {}{}", count, noun, count == 1 ? "" : "s");
}

// Products of mesh sizes are capped far above any slice, so that no product of valid sizes, however
// many, overflows (each size alone is bounded, their product is not).
constexpr long kProductCap = 1L << 40;
long capped_product(long product, long size) {
    if (size > 0 && product > kProductCap / size) return kProductCap;
    return std::min(product * size, kProductCap);
}

// `counted`: `total` as the messages name it ("4 chips in slice 2x2x1", "1 slice").
std::vector<network::MeshAxis> resolve_axes(const std::vector<AxisEntry>& entries, long total,
                                            const std::string& path, const core::SourceLocation& where,
                                            const std::string& counted, Diagnostics& d, bool broken,
                                            const std::string& hint = "") {
    std::vector<network::MeshAxis> axes;
    long known = 1;
    int autos = 0;
    for (const auto& e : entries) {
        if (e.size) {
            known = capped_product(known, *e.size);
        } else {
            ++autos;
        }
    }
    if (autos > 1) {
        d.error(where, path, "at most one axis per level may be auto");
        return axes;
    }
    if (broken) return axes;  // the mistakes in the axes are reported; their product would mislead
    const std::string product =
        known == kProductCap ? fmt::format("above {}", kProductCap) : std::to_string(known);
    for (const auto& e : entries) {
        int size = e.size.value_or(0);
        if (!e.size) {
            if (known <= 0 || total % known != 0) {
                d.error(e.location, path + "." + e.name,
                        fmt::format("auto cannot fill {}: the other axes ({}) do not divide it", counted,
                                    product));
                return {};
            }
            size = static_cast<int>(total / known);
        }
        axes.push_back(network::MeshAxis{e.name, size});
    }
    if (autos == 0 && known != total) {
        d.error(where, path,
                fmt::format("mesh product is {} but there {} {}{}", product, total == 1 ? "is" : "are",
                            counted, hint));
    }
    return axes;
}

// Cloud TPU names count TensorCores where a chip has two run as one device (v2 to v4, v5p: a v4-128
// is 64 chips): a mesh sized for the name's number on a slice of that many chips has twice the
// chips it was meant for. A hint when the mesh's product is half the slice's chips.
std::string tensorcore_hint(const RunSpec& spec, const std::vector<AxisEntry>& axes) {
    const auto& chip = spec.topology.chip;
    if (chip.tensorcores_per_chip != 2 || chip.devices_per_chip != 1) return "";
    long product = 1;
    for (const auto& e : axes) {
        if (!e.size) return "";
        product = capped_product(product, *e.size);
    }
    const long chips = spec.slice.chips();
    if (product * 2 != chips) return "";
    std::string generation = spec.topology.name;
    if (generation.rfind("tpu-", 0) == 0) generation = generation.substr(4);
    return fmt::format(
        " (if this is meant as a {}-{}: Cloud TPU names count TensorCores, {} per chip, so a "
        "{}-{} is {} chips, half of slice {})",
        generation, chips, chip.tensorcores_per_chip, generation, chips, product, spec.slice.to_string());
}

int parse_dimension_name(const YAML::Node& node) {
    if (!node.IsScalar()) return -1;
    const std::string& s = node.Scalar();
    if (s == "x") return 0;
    if (s == "y") return 1;
    if (s == "z") return 2;
    if (s == "w") return 3;
    if (s.size() == 1 && s[0] >= '0' && s[0] <= '3') return s[0] - '0';
    return -1;
}

}  // namespace

void parse_mesh(const MapReader& run, RunSpec& spec, Diagnostics& d, bool slices_ok) {
    if (!run.has("mesh")) {
        run.error("mesh", "missing required key");
        return;
    }
    YAML::Node node = run.raw("mesh");
    const std::string& file = run.file();
    if (!node.IsMap()) {
        run.error("mesh", "expected a mapping such as {fsdp: 4} or {ici: {fsdp: 4}, dcn: {data: 2}}");
        return;
    }
    // Meshes count devices, as JAX does: chips x devices_per_chip (a v3-8, slice 2x2, has 8).
    long devices = hardware::slice_devices(spec.topology, spec.slice);
    // One pass over the keys: a lookup by name in a yaml-cpp mapping compares every key as a
    // string (three of them were a fifth of parsing a sweep's config).
    bool long_form = false, maxtext_form = false;
    for (auto it = node.begin(); it != node.end(); ++it) {
        if (!it->first.IsScalar()) continue;
        const std::string& key = it->first.Scalar();
        long_form = long_form || key == "ici" || key == "dcn" || key == "mapping";
        maxtext_form = maxtext_form || parallel::parallelism_of_maxtext_key(key, nullptr) != nullptr;
    }
    std::vector<AxisEntry> ici, dcn;
    bool ici_broken = false, dcn_broken = false;
    core::SourceLocation ici_where = detail::location_of(node, file);
    if (long_form) {
        MapReader mesh(node, file, "mesh", d, run_keys_under("mesh"));
        if (!mesh.has("ici")) mesh.error("ici", "missing required key");
        ici = parse_axes(mesh.raw("ici"), file, "mesh.ici", d, ici_broken);
        if (mesh.has("ici")) ici_where = mesh.location("ici");
        dcn = parse_axes(mesh.raw("dcn"), file, "mesh.dcn", d, dcn_broken);
        if (mesh.has("mapping")) {
            YAML::Node mapping = mesh.raw("mapping");
            if (!mapping.IsMap()) {
                mesh.error(
                    "mapping",
                    "expected a mapping of axis names to lists of torus dimensions, e.g. {tensor: [z]}");
            } else {
                for (auto it = mapping.begin(); it != mapping.end(); ++it) {
                    std::string axis = it->first.as<std::string>("");
                    std::string key_path = "mesh.mapping." + axis;
                    bool declared = std::any_of(ici.begin(), ici.end(),
                                                [&](const AxisEntry& e) { return e.name == axis; });
                    if (!declared) {
                        d.error(detail::location_of(it->first, file), key_path, "not an axis of mesh.ici");
                        continue;
                    }
                    std::vector<int> dims;
                    YAML::Node list = it->second;
                    if (!list.IsSequence()) list = YAML::Node(std::vector<YAML::Node>{it->second});
                    for (const auto& item : list) {
                        int dim = parse_dimension_name(item);
                        if (dim < 0) {
                            d.error(detail::location_of(item, file), key_path,
                                    "torus dimensions are x, y, z (or 0, 1, 2)");
                        } else {
                            dims.push_back(dim);
                        }
                    }
                    spec.mesh.mapping[axis] = dims;
                }
            }
        }
        if (mesh.has("custom_mesh")) {
            spec.mesh.custom = mesh.string("custom_mesh", false).value_or("");
            check_custom_mesh(spec.mesh.custom, mesh.location("custom_mesh"), d);
            // The custom mesh places every axis itself: a mapping beside it would go unread.
            if (mesh.has("mapping") && !spec.mesh.custom.empty())
                mesh.error("custom_mesh",
                           fmt::format("give mapping or custom_mesh, not both ({} places the axes itself)",
                                       spec.mesh.custom));
        }
    } else if (maxtext_form) {
        parse_maxtext_mesh(node, file, ici, dcn, spec.mesh.custom, d, ici_broken, dcn_broken);
        check_custom_mesh(spec.mesh.custom, detail::location_of(node, file), d);
    } else {
        YAML::Node axes = node;
        if (node["custom_mesh"].IsDefined()) {
            axes = YAML::Clone(node);
            spec.mesh.custom = node["custom_mesh"].IsScalar() ? node["custom_mesh"].Scalar() : "";
            check_custom_mesh(spec.mesh.custom, detail::location_of(node["custom_mesh"], file), d);
            axes.remove("custom_mesh");
        }
        ici = parse_axes(axes, file, "mesh", d, ici_broken);
    }
    // A one-chip slice may run a mesh on fewer of its devices (hardware::devices_per_chip_in_use).
    if (std::none_of(ici.begin(), ici.end(), [](const AxisEntry& e) { return !e.size; })) {
        long product = 1;
        for (const auto& e : ici) product = capped_product(product, std::max(*e.size, 0));
        const int in_use = hardware::devices_per_chip_in_use(spec.topology, spec.slice, product);
        if (in_use < spec.topology.chip.devices_per_chip) devices = product;
    }
    const std::string what =
        spec.topology.chip.devices_per_chip > 1
            ? fmt::format("{} in slice {} ({} x {} devices per chip)", plural(devices, "device"),
                          spec.slice.to_string(), plural(spec.slice.chips(), "chip"),
                          spec.topology.chip.devices_per_chip)
            : fmt::format("{} in slice {}", plural(devices, "chip"), spec.slice.to_string());
    spec.mesh.ici = resolve_axes(ici, devices, long_form ? "mesh.ici" : "mesh", ici_where, what, d,
                                 ici_broken, tensorcore_hint(spec, ici));
    // MaxText's form has no mesh.dcn: its dcn_<axis>_parallelism keys multiply to the slices.
    spec.mesh.dcn = resolve_axes(
        dcn, spec.slices, maxtext_form && !long_form ? "mesh" : "mesh.dcn", detail::location_of(node, file),
        plural(spec.slices, "slice"), d, dcn_broken || !slices_ok,
        maxtext_form && !long_form ? " (the product of the dcn_<axis>_parallelism keys)" : "");
    for (const auto& axis : spec.mesh.dcn) {
        const parallel::ParallelismKind* kind = parallel::parallelism_named(axis.name);
        if (kind && !kind->across_slices && axis.size > 1) {
            const auto across = parallel::dcn_axis_names();
            std::string names;
            for (std::size_t i = 0; i < across.size(); ++i)
                names += (i == 0 ? "" : i + 1 == across.size() ? " and " : ", ") + across[i];
            auto given =
                std::find_if(dcn.begin(), dcn.end(), [&](const AxisEntry& e) { return e.name == axis.name; });
            d.error(
                given != dcn.end() ? given->location : detail::location_of(node, file),
                given != dcn.end() ? given->key_path : "mesh.dcn." + axis.name,
                fmt::format("only {} parallelism run{} across slices over DCN (use {})", names,
                            across.size() == 1 ? "s" : "", across.size() == 1 ? across[0] : "one of them"));
        }
    }
}

}  // namespace podsim::config
