#include "config/load.hpp"

#include <algorithm>
#include <cstdlib>

#include <fmt/format.h>

#include "config/schema.hpp"
#include "config/yaml_reader.hpp"
#include "core/suggest.hpp"
#include "network/torus.hpp"
#include "run/simulate.hpp"

namespace podsim::config {

namespace fs = std::filesystem;
using core::Diagnostics;
using core::Dimension;
using detail::MapReader;

namespace {

const std::vector<std::string> kRunAxisNames = {"data", "fsdp", "tensor"};

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

// Resolves `model:`/`topology:` given as a name or a path; records an error when neither works.
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

// ---------------------------------------------------------------- model

workload::ModelSpec parse_model(const YAML::Node& node, const std::string& file, const std::string& path,
                                Diagnostics& d) {
    using workload::ModelFamily;
    workload::ModelSpec m;
    MapReader r(node, file, path, d, keys_under(model_schema(), ""));
    if (!r.ok()) return m;
    check_schema(r, "podsim.model/v1");
    m.name = r.string("name", true).value_or("");
    auto family = r.choice("family", {"gpt2", "decoder", "encoder", "vit"}, true);
    if (family) m.family = static_cast<ModelFamily>(*family);
    auto get = [&](const char* key, bool required) {
        return static_cast<int>(r.integer(key, required).value_or(0));
    };
    m.layers = get("layers", true);
    m.d_model = get("d_model", true);
    m.heads = get("heads", true);
    m.head_dim = get("head_dim", false);
    m.kv_heads = get("kv_heads", false);
    m.d_ff = get("d_ff", false);
    if (auto a = r.choice("activation", {"gelu", "relu", "swiglu", "geglu"}, false)) {
        m.activation = static_cast<workload::Activation>(*a);
    }
    m.tied_embeddings = r.boolean("tied_embeddings").value_or(true);
    m.bias = r.boolean("bias").value_or(true);
    m.parallel_block = r.boolean("parallel_block").value_or(false);
    m.position = m.family == ModelFamily::decoder ? workload::PositionEmbedding::rope
                                                  : workload::PositionEmbedding::learned;
    if (auto p = r.choice("position", {"learned", "rope", "relative", "none"}, false)) {
        m.position = static_cast<workload::PositionEmbedding>(*p);
    }
    const bool vit = m.family == ModelFamily::vit;
    if (vit) {
        m.image_size = get("image_size", true);
        m.patch_size = get("patch_size", true);
        m.channels = r.has("channels") ? get("channels", false) : 3;
        m.num_classes = get("num_classes", true);
        if (m.image_size > 0 && m.patch_size > 0 && m.image_size % m.patch_size != 0) {
            r.error("patch_size", fmt::format("patch_size ({}) does not divide image_size ({})", m.patch_size,
                                              m.image_size));
        }
    } else {
        for (const char* key : {"image_size", "patch_size", "channels", "num_classes"}) {
            if (r.has(key))
                r.error(key, fmt::format("only ViT models take {} (family is {})", key,
                                         workload::family_name(m.family)));
        }
        m.vocab = r.integer("vocab", true).value_or(0);
        bool learned = m.position == workload::PositionEmbedding::learned;
        m.max_positions = static_cast<int>(r.integer("max_positions", learned).value_or(0));
    }
    if (m.heads > 0 && m.d_model > 0) {
        if (m.head_dim == 0) {
            if (m.d_model % m.heads != 0) {
                r.error("heads",
                        fmt::format("heads ({}) does not divide d_model ({}); give head_dim explicitly",
                                    m.heads, m.d_model));
            } else {
                m.head_dim = m.d_model / m.heads;
            }
        }
        if (m.kv_heads == 0) m.kv_heads = m.heads;
        if (m.heads % m.kv_heads != 0) {
            r.error("kv_heads", fmt::format("kv_heads ({}) must divide heads ({})", m.kv_heads, m.heads));
        }
        if (m.d_ff == 0) m.d_ff = 4 * m.d_model;
    }
    return m;
}

// ---------------------------------------------------------------- topology

hardware::TopologySpec parse_topology(const YAML::Node& node, const std::string& file,
                                      const std::string& path, Diagnostics& d) {
    hardware::TopologySpec t;
    MapReader r(node, file, path, d, keys_under(topology_schema(), ""));
    if (!r.ok()) return t;
    check_schema(r, "podsim.topology/v1");
    t.name = r.string("name", true).value_or("");
    auto sub = [&](const std::string& key) { return r.path_of(key); };

    if (!r.has("chip")) r.error("chip", "missing required key");
    MapReader chip(r.has("chip") ? r.raw("chip") : YAML::Node(YAML::NodeType::Map), file, sub("chip"), d,
                   keys_under(topology_schema(), "chip"));
    if (chip.ok() && r.has("chip")) {
        t.chip.name = chip.string("name", false).value_or(t.name);
        if (!chip.has("peak_flops")) {
            chip.error("peak_flops", "missing required key");
        } else {
            MapReader peaks(chip.raw("peak_flops"), file, chip.path_of("peak_flops"), d, core::dtype_names());
            if (peaks.ok()) {
                for (const auto& name : core::dtype_names()) {
                    if (auto v = peaks.quantity(name, Dimension::flop_rate, false)) {
                        if (*v <= 0) {
                            peaks.error(name, "must be positive");
                        } else {
                            t.chip.peak_flops[*core::parse_dtype(name)] = *v;
                        }
                    }
                }
                if (!t.chip.peak_flops.count(core::DType::bf16)) peaks.error("bf16", "missing required key");
            }
        }
        t.chip.hbm_capacity = chip.quantity("hbm_capacity", Dimension::bytes, true).value_or(0);
        t.chip.hbm_bandwidth = chip.quantity("hbm_bandwidth", Dimension::bandwidth, true).value_or(0);
        if (chip.has("hbm_capacity") && t.chip.hbm_capacity <= 0)
            chip.error("hbm_capacity", "must be positive");
        if (chip.has("hbm_bandwidth") && t.chip.hbm_bandwidth <= 0)
            chip.error("hbm_bandwidth", "must be positive");
        t.chip.mxu_tile = static_cast<int>(chip.integer("mxu_tile", false).value_or(128));
        t.chip.tensorcores = static_cast<int>(chip.integer("tensorcores", false).value_or(1));
        chip.quantity("clock", Dimension::frequency, false);
    }

    if (!r.has("ici")) r.error("ici", "missing required key");
    MapReader ici(r.has("ici") ? r.raw("ici") : YAML::Node(YAML::NodeType::Map), file, sub("ici"), d,
                  keys_under(topology_schema(), "ici"));
    if (ici.ok() && r.has("ici")) {
        t.ici.dims = static_cast<int>(ici.integer("dims", false).value_or(3));
        if (t.ici.dims > 4) ici.error("dims", "at most 4 torus dimensions");
        t.ici.link_bandwidth = ici.quantity("link_bandwidth", Dimension::bandwidth, true).value_or(0);
        if (ici.has("link_bandwidth") && t.ici.link_bandwidth <= 0)
            ici.error("link_bandwidth", "must be positive");
        t.ici.hop_latency = ici.quantity("hop_latency", Dimension::time, true).value_or(0);
        if (auto w = ici.choice("wraparound", {"always", "none", "whole_cubes_of_4", "length_16"}, false)) {
            t.ici.wraparound = static_cast<hardware::WraparoundRule>(*w);
        } else {
            t.ici.wraparound = hardware::WraparoundRule::always;
        }
        if (auto s = ici.string("max_slice", true)) {
            if (auto shape = hardware::parse_slice_shape(*s)) {
                t.ici.max_slice = *shape;
            } else {
                ici.error("max_slice", fmt::format("'{}' is not a shape like 16x16x16", *s));
            }
        }
        t.ici.twisted_torus = ici.boolean("twisted_torus").value_or(false);
    }

    if (r.has("host")) {
        MapReader host(r.raw("host"), file, sub("host"), d, keys_under(topology_schema(), "host"));
        t.host.chips_per_host = static_cast<int>(host.integer("chips_per_host", false).value_or(4));
        t.host.host_memory = host.quantity("host_memory", Dimension::bytes, false).value_or(0);
    }
    if (r.has("dcn")) {
        MapReader dcn(r.raw("dcn"), file, sub("dcn"), d, keys_under(topology_schema(), "dcn"));
        t.dcn.bandwidth_per_chip =
            dcn.quantity("bandwidth_per_chip", Dimension::bandwidth, false).value_or(0);
        if (auto per_host = dcn.quantity("bandwidth_per_host", Dimension::bandwidth, false)) {
            if (dcn.has("bandwidth_per_chip")) {
                dcn.error("bandwidth_per_host", "give bandwidth_per_chip or bandwidth_per_host, not both");
            }
            t.dcn.bandwidth_per_chip = *per_host / std::max(1, t.host.chips_per_host);
        }
        t.dcn.latency = dcn.quantity("latency", Dimension::time, false).value_or(0);
    }
    return t;
}

// ---------------------------------------------------------------- run

struct AxisEntry {
    std::string name;
    std::optional<int> size;  // nullopt = auto
    core::SourceLocation location;
};

std::vector<AxisEntry> parse_axes(const YAML::Node& node, const std::string& file, const std::string& path,
                                  Diagnostics& d) {
    std::vector<AxisEntry> axes;
    if (node.IsNull() || !node.IsDefined()) return axes;
    if (!node.IsMap()) {
        d.error(detail::location_of(node, file), path,
                "expected a mapping of axis names to sizes, e.g. {fsdp: 4}");
        return axes;
    }
    for (auto it = node.begin(); it != node.end(); ++it) {
        std::string name = it->first.IsScalar() ? it->first.Scalar() : "";
        std::string key_path = path + "." + name;
        if (std::find(kRunAxisNames.begin(), kRunAxisNames.end(), name) == kRunAxisNames.end()) {
            std::string message = fmt::format("unknown mesh axis '{}': axes are data, fsdp and tensor", name);
            if (auto hint = core::closest_match(name, kRunAxisNames))
                message += fmt::format(" (did you mean '{}'?)", *hint);
            d.error(detail::location_of(it->first, file), key_path, message);
            continue;
        }
        for (const auto& seen : axes) {
            if (seen.name == name)
                d.error(detail::location_of(it->first, file), key_path, "axis given twice");
        }
        AxisEntry entry{name, std::nullopt, detail::location_of(it->second, file)};
        if (it->second.IsScalar() && it->second.Scalar() == "auto") {
            axes.push_back(entry);
            continue;
        }
        auto size = detail::read_integer(it->second, file, key_path, 1, d);
        if (!size) continue;
        entry.size = static_cast<int>(*size);
        axes.push_back(entry);
    }
    return axes;
}

std::vector<network::MeshAxis> resolve_axes(const std::vector<AxisEntry>& entries, long total,
                                            const std::string& path, const core::SourceLocation& where,
                                            const std::string& what, Diagnostics& d) {
    std::vector<network::MeshAxis> axes;
    long known = 1;
    int autos = 0;
    for (const auto& e : entries) {
        if (e.size) {
            known *= *e.size;
        } else {
            ++autos;
        }
    }
    if (autos > 1) {
        d.error(where, path, "at most one axis per level may be auto");
        return axes;
    }
    for (const auto& e : entries) {
        int size = e.size.value_or(0);
        if (!e.size) {
            if (known <= 0 || total % known != 0) {
                d.error(e.location, path + "." + e.name,
                        fmt::format("auto cannot fill {} {}: the other axes ({}) do not divide it", total,
                                    what, known));
                return {};
            }
            size = static_cast<int>(total / known);
        }
        axes.push_back(network::MeshAxis{e.name, size});
    }
    if (autos == 0 && known != total) {
        d.error(where, path, fmt::format("mesh product is {} but there are {} {}", known, total, what));
    }
    return axes;
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

void parse_mesh(const MapReader& run, run::RunSpec& spec, Diagnostics& d) {
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
    const long chips = spec.slice.chips();
    const YAML::Node& mesh_map = node;
    bool long_form =
        mesh_map["ici"].IsDefined() || mesh_map["dcn"].IsDefined() || mesh_map["mapping"].IsDefined();
    std::vector<AxisEntry> ici, dcn;
    core::SourceLocation ici_where = detail::location_of(node, file);
    if (long_form) {
        MapReader mesh(node, file, "mesh", d, keys_under(run_schema(), "mesh"));
        if (!mesh.has("ici")) mesh.error("ici", "missing required key");
        ici = parse_axes(mesh.raw("ici"), file, "mesh.ici", d);
        if (mesh.has("ici")) ici_where = mesh.location("ici");
        dcn = parse_axes(mesh.raw("dcn"), file, "mesh.dcn", d);
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
    } else {
        ici = parse_axes(node, file, "mesh", d);
    }
    spec.mesh.ici = resolve_axes(ici, chips, long_form ? "mesh.ici" : "mesh", ici_where,
                                 fmt::format("chips in slice {}", spec.slice.to_string()), d);
    spec.mesh.dcn = resolve_axes(dcn, spec.slices, "mesh.dcn", detail::location_of(node, file), "slices", d);
    for (const auto& axis : spec.mesh.dcn) {
        if (axis.name != "data" && axis.size > 1) {
            d.error(detail::location_of(node, file), "mesh.dcn." + axis.name,
                    "only data parallelism runs across slices over DCN (use data)");
        }
    }
}

cost::Calibration parse_calibration(const YAML::Node& node, const std::string& file, const std::string& path,
                                    const fs::path& base_dir, cost::Calibration base, Diagnostics& d);

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
        MapReader r(root, p.string(), "", d, {"schema", "name", "source", "notes", "parameters", "fit"});
        if (!r.ok()) return calibration;
        check_schema(r, "podsim.calibration/v1");
        if (r.has("parameters"))
            apply_calibration_entries(r.raw("parameters"), p.string(), "parameters", calibration, d);
        return calibration;
    }
    apply_calibration_entries(node, file, path, calibration, d);
    return calibration;
}

}  // namespace

// Model and topology files already read, for sweeps that parse thousands of variants of one config.
struct LoadCache {
    std::map<std::string, workload::ModelSpec> models;
    std::map<std::string, hardware::TopologySpec> topologies;
};

namespace {

run::RunSpec parse_run(const YAML::Node& root, const std::string& file, const fs::path& base_dir,
                       const std::string& path, Diagnostics& d, LoadCache* cache = nullptr) {
    run::RunSpec spec;
    spec.source = file;
    MapReader r(root, file, path, d, keys_under(run_schema(), ""));
    if (!r.ok()) return spec;
    check_schema(r, "podsim.run/v1");
    spec.name = r.string("name", false).value_or(fs::path(file).stem().string());

    bool model_ok = false;
    if (r.has("model") && r.raw("model").IsMap()) {
        std::size_t errors_before = d.size();
        spec.model = parse_model(r.raw("model"), file, r.path_of("model"), d);
        model_ok = d.size() == errors_before;
    } else if (std::string ref = r.string("model", false).value_or("");
               cache && cache->models.count(base_dir.string() + "|" + ref)) {
        spec.model = cache->models.at(base_dir.string() + "|" + ref);
        model_ok = true;
    } else if (auto p = resolve_reference(r, "model", "models", base_dir)) {
        Diagnostics local;
        YAML::Node model_root = detail::load_yaml_file(p->string(), local);
        if (local.empty()) spec.model = parse_model(model_root, p->string(), "", local);
        model_ok = local.empty();
        if (model_ok && cache) cache->models[base_dir.string() + "|" + ref] = spec.model;
        d.append(local);
    }

    bool topology_ok = false;
    if (r.has("topology") && r.raw("topology").IsMap()) {
        std::size_t errors_before = d.size();
        spec.topology = parse_topology(r.raw("topology"), file, r.path_of("topology"), d);
        topology_ok = d.size() == errors_before;
    } else if (std::string ref = r.string("topology", false).value_or("");
               cache && cache->topologies.count(base_dir.string() + "|" + ref)) {
        spec.topology = cache->topologies.at(base_dir.string() + "|" + ref);
        topology_ok = true;
    } else if (auto p = resolve_reference(r, "topology", "topologies", base_dir)) {
        Diagnostics local;
        YAML::Node topology_root = detail::load_yaml_file(p->string(), local);
        if (local.empty()) spec.topology = parse_topology(topology_root, p->string(), "", local);
        topology_ok = local.empty();
        if (topology_ok && cache) cache->topologies[base_dir.string() + "|" + ref] = spec.topology;
        d.append(local);
    }

    bool slice_ok = false;
    if (auto s = r.string("slice", true)) {
        if (auto shape = hardware::parse_slice_shape(*s)) {
            spec.slice = *shape;
            slice_ok = true;
            if (topology_ok) {
                if (auto error = hardware::slice_shape_error(spec.topology, spec.slice)) {
                    r.error("slice", *error);
                    slice_ok = false;
                } else {
                    spec.slice = hardware::normalized_slice(spec.topology, spec.slice);
                }
            }
        } else {
            r.error("slice", fmt::format("'{}' is not a slice shape such as 2x2x1 or 4x4x8", *s));
        }
    }
    spec.slices = static_cast<int>(r.integer("slices", false).value_or(1));
    spec.twisted_torus = r.boolean("twisted_torus").value_or(false);
    if (spec.twisted_torus && slice_ok && topology_ok &&
        (!spec.topology.ici.twisted_torus || !network::twistable(spec.slice))) {
        r.error("twisted_torus",
                fmt::format("{} slice {} cannot be twisted (n x n x 2n or n x 2n x 2n, n >= 4, on a "
                            "topology with twisted tori)",
                            spec.topology.name, spec.slice.to_string()));
    }

    std::size_t errors_before_mesh = d.size();
    if (slice_ok) parse_mesh(r, spec, d);
    bool mesh_ok = slice_ok && d.size() == errors_before_mesh;

    // training
    std::size_t errors_before_training = d.size();
    if (!r.has("training")) r.error("training", "missing required key");
    MapReader t(r.has("training") ? r.raw("training") : YAML::Node(YAML::NodeType::Map), file,
                r.path_of("training"), d, keys_under(run_schema(), "training"));
    if (t.ok() && r.has("training")) {
        auto global = t.integer("global_batch", false);
        auto per_chip = t.integer("per_chip_batch", false);
        if (global && per_chip) {
            t.error("per_chip_batch", "give global_batch or per_chip_batch, not both");
        } else if (global) {
            spec.training.global_batch = *global;
        } else if (per_chip) {
            spec.training.global_batch = *per_chip * spec.slice.chips() * spec.slices;
        } else if (!t.has("global_batch") && !t.has("per_chip_batch")) {
            t.error("global_batch", "missing required key (or give per_chip_batch)");
        }
        bool text = model_ok && !spec.model.is_vit();
        spec.training.seq_len = static_cast<int>(t.integer("seq_len", text).value_or(0));
        if (text && spec.model.position == workload::PositionEmbedding::learned &&
            spec.training.seq_len > 0 && spec.training.seq_len > spec.model.max_positions) {
            t.error("seq_len", fmt::format("{} exceeds the model's max_positions ({})", spec.training.seq_len,
                                           spec.model.max_positions));
        }
        spec.training.microbatches = static_cast<int>(t.integer("microbatches", false).value_or(1));
        if (auto dt = t.choice("dtype", core::dtype_names(), false)) {
            spec.training.dtype = *core::parse_dtype(core::dtype_names()[*dt]);
        }
        if (auto dt = t.choice("param_dtype", core::dtype_names(), false)) {
            spec.training.param_dtype = *core::parse_dtype(core::dtype_names()[*dt]);
        }
        if (auto o = t.choice("optimizer", {"adam", "adamw", "adafactor", "sgd"}, false)) {
            spec.training.optimizer = static_cast<workload::Optimizer>(*o);
        }
        if (auto m = t.choice("remat", workload::remat_names(), false)) {
            spec.training.remat = static_cast<workload::Remat>(*m);
            if (spec.training.remat == workload::Remat::qkv_proj_offloaded ||
                spec.training.remat == workload::Remat::minimal_offloaded) {
                t.error("remat",
                        fmt::format("'{}' offloads activations to host memory, which podsim does not "
                                    "model yet; use the policy without offload to bound it",
                                    workload::remat_name(spec.training.remat)));
            }
        }
        // MaxText's `attention` values; `mha` is MaxText's older name for dot_product.
        if (auto a = t.choice("attention", {"dot_product", "mha", "flash"}, false)) {
            spec.training.attention = *a == 2 ? workload::Attention::flash : workload::Attention::dot_product;
        }
        if (auto dt = t.choice("master_dtype", core::dtype_names(), false)) {
            spec.training.master_dtype = core::parse_dtype(core::dtype_names()[*dt]);
        }
        spec.training.tensor_sequence = t.boolean("tensor_sequence").value_or(false);
    }
    bool training_ok = t.ok() && d.size() == errors_before_training;

    if (r.has("runtime")) {
        MapReader rt(r.raw("runtime"), file, r.path_of("runtime"), d, keys_under(run_schema(), "runtime"));
        if (auto f = rt.choice("framework", {"jax", "pytorch-xla"}, false)) {
            spec.runtime.framework = static_cast<parallel::Framework>(*f);
        }
        spec.runtime.async_collectives = rt.boolean("async_collectives");
        spec.runtime.host_overhead = rt.quantity("host_overhead", Dimension::time, false);
        spec.runtime.prefetch_depth = static_cast<int>(rt.integer("prefetch_depth", false, 0).value_or(1));
        spec.runtime.compile_time = rt.quantity("compile_time", Dimension::time, false);
        spec.runtime.recompile_every_step = rt.boolean("recompile_every_step").value_or(false);
        if (auto init = rt.choice("host_init", {"full", "sharded"}, false))
            spec.runtime.host_full_init = *init == 0;
    }
    if (r.has("report")) {
        MapReader rep(r.raw("report"), file, r.path_of("report"), d, keys_under(run_schema(), "report"));
        spec.mfu_attention = rep.boolean("mfu_attention").value_or(false);
    }
    if (r.has("calibration")) {
        spec.calibration = parse_calibration(r.raw("calibration"), file, r.path_of("calibration"), base_dir,
                                             spec.calibration, d);
    }

    // Semantic checks need every part to be valid first.
    if (model_ok && topology_ok && mesh_ok && training_ok) {
        for (const auto& e : run::semantic_errors(spec)) {
            std::string top = e.key_path.substr(0, e.key_path.find('.'));
            std::string full = path.empty() ? e.key_path : path + "." + e.key_path;
            d.error(r.location(top), full, e.message);
        }
    }
    return spec;
}

run::RunSpec finish(run::RunSpec spec, const Diagnostics& d) {
    core::throw_if_errors(d);
    return spec;
}

}  // namespace

// For sweeps: a run config tree built in memory.
run::RunSpec parse_run_node(const YAML::Node& root, const std::string& file, const fs::path& base_dir,
                            Diagnostics& d, LoadCache* cache) {
    return parse_run(root, file, base_dir, "", d, cache);
}

std::shared_ptr<LoadCache> make_load_cache() {
    return std::make_shared<LoadCache>();
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

run::RunSpec load_run_file(const std::string& path) {
    Diagnostics d;
    YAML::Node root = detail::load_yaml_file(path, d);
    if (!d.empty()) throw core::UserError(d);
    fs::path base = fs::path(path).parent_path();
    if (base.empty()) base = ".";
    // A published case (tests/validation/*.yaml) runs as its `run:` block, so any case can be
    // looked at with `podsim run CASE.yaml`.
    if (root.IsMap() && root["schema"].IsScalar() && root["schema"].Scalar() == "podsim.validation/v1" &&
        root["run"].IsMap()) {
        return finish(parse_run(root["run"], path, base, "run", d), d);
    }
    return finish(parse_run(root, path, base, "", d), d);
}

run::RunSpec load_run_text(const std::string& yaml_text, const std::string& name, const fs::path& base_dir) {
    Diagnostics d;
    YAML::Node root = detail::load_yaml_string(yaml_text, name, d);
    if (!d.empty()) throw core::UserError(d);
    return finish(parse_run(root, name, base_dir, "", d), d);
}

workload::ModelSpec load_model_file(const std::string& path) {
    Diagnostics d;
    YAML::Node root = detail::load_yaml_file(path, d);
    workload::ModelSpec m;
    if (d.empty()) m = parse_model(root, path, "", d);
    core::throw_if_errors(d);
    return m;
}

hardware::TopologySpec load_topology_file(const std::string& path) {
    Diagnostics d;
    YAML::Node root = detail::load_yaml_file(path, d);
    hardware::TopologySpec t;
    if (d.empty()) t = parse_topology(root, path, "", d);
    core::throw_if_errors(d);
    return t;
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
        for (const std::string key : {"measured", "tolerance"}) {
            auto& out = key == "measured" ? c.measured : c.tolerance;
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
    const std::vector<std::string> keys = {
        "schema", "id",   "source", "setup",    "predicted_by_source", "topology",  "slice",        "mesh",
        "op",     "axis", "bytes",  "measured", "pod_viewer",          "tolerance", "expected_miss"};
    std::vector<CollectiveCase> cases;
    for (const auto& f : files) {
        const std::string file = f.string();
        YAML::Node root = detail::load_yaml_file(file, d);
        if (!root.IsDefined() || root.IsNull()) continue;
        MapReader r(root, file, "", d, keys);
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
            c.bytes = r.quantity("bytes", Dimension::bytes, true).value_or(0);
            if (r.has("measured")) {
                MapReader m(r.raw("measured"), file, "measured", d, {"time"});
                c.measured_time = m.quantity("time", Dimension::time, true).value_or(0);
            } else {
                r.error("measured", "missing required key");
            }
        }
        if (r.has("tolerance")) {
            MapReader t(r.raw("tolerance"), file, "tolerance", d, {"rel", "abs", "median_rel"});
            c.tolerance_rel = t.number("rel", false).value_or(0);
            c.tolerance_abs = t.quantity("abs", Dimension::time, false).value_or(0);
            c.tolerance_median_rel = t.number("median_rel", false).value_or(0);
        } else {
            r.error("tolerance", "missing required key");
        }
        cases.push_back(std::move(c));
    }
    core::throw_if_errors(d);
    return cases;
}

}  // namespace podsim::config
