#include "config/load.hpp"

#include <algorithm>
#include <cctype>

#include <fmt/format.h>

#include "config/parse.hpp"
#include "config/schema.hpp"
#include "config/whole_run_block.hpp"
#include "config/yaml_reader.hpp"
#include "network/torus.hpp"
#include "parallel/parallelism.hpp"
#include "parallel/sharding_errors.hpp"

namespace podsim::config {

namespace fs = std::filesystem;
using core::Diagnostics;
using core::Dimension;
using detail::MapReader;
using parallel::runtime_key;
using workload::training_key;

namespace {

RunSpec finish(RunSpec spec, const Diagnostics& d) {
    core::throw_if_errors(d);
    return spec;
}

// `training.global_batch`, or `training.per_chip_batch` times the chips of every slice.
void read_batch(const MapReader& t, RunSpec& spec) {
    auto global = t.integer(training_key("training.global_batch"));
    auto per_chip = t.integer(training_key("training.per_chip_batch"));
    if (global && per_chip) {
        t.error("per_chip_batch", "give global_batch or per_chip_batch, not both");
    } else if (global) {
        spec.training.global_batch = *global;
    } else if (per_chip) {
        spec.training.global_batch = *per_chip * spec.slice.chips() * spec.slices;
    } else if (!t.has("global_batch") && !t.has("per_chip_batch")) {
        t.error("global_batch", "missing required key (or give per_chip_batch)");
    }
}

// A slice given by its Cloud TPU name (v4-128, v5e-16): how many chips that is and a shape of them.
// The names count TensorCores where a chip has two run as one device (v2 to v4, v5p).
std::string cloud_name_hint(const std::string& text, const hardware::TopologySpec& topology) {
    const auto dash = text.rfind('-');
    if (dash == std::string::npos || dash == 0 || text[0] != 'v') return "";
    long cores = 0;
    for (std::size_t i = dash + 1; i < text.size(); ++i) {
        if (!std::isdigit(static_cast<unsigned char>(text[i])) || cores > (1L << 30)) return "";
        cores = cores * 10 + (text[i] - '0');
    }
    const int per_chip = topology.chip.devices_per_chip == 1 ? topology.chip.tensorcores_per_chip : 1;
    if (cores <= 0 || cores % per_chip != 0) return "";
    const long chips = cores / per_chip;
    std::string hint = fmt::format(" ({} is {} chip{}", text, chips, chips == 1 ? "" : "s");
    if (per_chip > 1)
        hint +=
            fmt::format(": Cloud TPU names count TensorCores, {} per chip of {}", per_chip, topology.name);
    // A shape of that many chips: powers of two spread over the dimensions, shortest first (sides
    // of 1 last), as Cloud TPU writes them: 2x2x1, 2x2x4, 4x4x4.
    if ((chips & (chips - 1)) == 0 && topology.ici.dims >= 2) {
        std::vector<long> sides(static_cast<std::size_t>(topology.ici.dims), 1);
        for (long left = chips, d = 0; left > 1; left /= 2, d = (d + 1) % topology.ici.dims)
            sides[static_cast<std::size_t>(d)] *= 2;
        std::sort(sides.begin(), sides.end());
        std::stable_partition(sides.begin(), sides.end(), [](long side) { return side > 1; });
        std::string shape;
        for (long side : sides) shape += (shape.empty() ? "" : "x") + std::to_string(side);
        hint += fmt::format("; as a shape, e.g. {}", shape);
    }
    return hint + ")";
}

// `whole_run:`, which needs a valid model and training section.
void read_whole_run(const MapReader& r, const std::string& file, RunSpec& spec, Diagnostics& d) {
    if (r.has("whole_run"))
        spec.whole_run = detail::parse_whole_run(r.raw("whole_run"), file, r.path_of("whole_run"), spec, d);
}

// The key an error about mesh axis `axis` names where the mesh is not in the short form
// ({expert: 4}): mesh.ici.expert in the long form, and in MaxText's form the axis's
// ici_<x>_parallelism key (its dcn_ key where only that is given); empty where the axis is no key.
std::pair<std::string, YAML::Node> mesh_axis_key(const YAML::Node& mesh, const std::string& axis) {
    if (!mesh.IsMap()) return {};
    for (const char* level : {"ici", "dcn"}) {
        const YAML::Node axes = mesh[level];
        if (!axes.IsDefined() || !axes.IsMap()) continue;
        if (const YAML::Node size = axes[axis]; size.IsDefined())
            return {std::string(level) + "." + axis, size};
    }
    std::pair<std::string, YAML::Node> dcn_key;
    for (auto it = mesh.begin(); it != mesh.end(); ++it) {
        if (!it->first.IsScalar()) continue;
        bool is_dcn = false;
        const parallel::ParallelismKind* kind =
            parallel::parallelism_of_maxtext_key(it->first.Scalar(), &is_dcn);
        if (kind == nullptr || kind->name != axis) continue;
        if (!is_dcn) return {it->first.Scalar(), it->first};
        dcn_key = {it->first.Scalar(), it->first};
    }
    return dcn_key;
}

// Whether the model, batch and mesh shard, reported at the section each error names (at the key
// of a mesh axis, as the file spells it).
void check_sharding(const MapReader& r, const std::string& path, const RunSpec& spec, Diagnostics& d) {
    for (const auto& e : parallel::sharding_errors(spec.model, spec.training, spec.topology, spec.slice,
                                                   spec.slices, spec.mesh)) {
        std::string top = e.key_path.substr(0, e.key_path.find('.'));
        std::string key_path = e.key_path;
        core::SourceLocation where = r.location(top);
        const YAML::Node mesh = top == "mesh" && r.has("mesh") ? r.raw("mesh") : YAML::Node();
        if (mesh.IsMap() && key_path.size() > 5 && !mesh[key_path.substr(5)].IsDefined()) {
            if (auto [key, node] = mesh_axis_key(mesh, key_path.substr(5)); !key.empty()) {
                key_path = "mesh." + key;
                where = detail::location_of(node, r.file());
            }
        }
        std::string full = path.empty() ? key_path : path + "." + key_path;
        d.error(where, full, e.message);
    }
}

}  // namespace

RunSpec parse_run(const YAML::Node& root, const std::string& file, const fs::path& base_dir,
                  const std::string& path, Diagnostics& d, LoadCache* cache, bool semantic_checks) {
    RunSpec spec;
    spec.source = file;
    MapReader r(root, file, path, d, run_keys_under(""));
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
    if (auto s = r.string(run_key("slice"))) {
        if (auto shape = hardware::parse_slice_shape(*s)) {
            spec.slice = *shape;
            slice_ok = r.check_bounds(run_key("slice"), static_cast<double>(shape->chips()));
            if (slice_ok && topology_ok) {
                if (auto error = hardware::slice_shape_error(spec.topology, spec.slice)) {
                    r.error("slice", *error);
                    slice_ok = false;
                } else {
                    spec.slice = hardware::normalized_slice(spec.topology, spec.slice);
                }
            }
        } else {
            r.error("slice", fmt::format("'{}' is not a slice shape such as 2x2x1 or 4x4x8{}", *s,
                                         topology_ok ? cloud_name_hint(*s, spec.topology) : std::string()));
        }
    }
    const std::size_t errors_before_slices = d.size();
    spec.slices = static_cast<int>(r.integer(run_key("slices")).value_or(spec.slices));
    const bool slices_ok = d.size() == errors_before_slices;
    spec.twisted_torus = r.boolean(run_key("twisted_torus")).value_or(spec.twisted_torus);
    if (spec.twisted_torus && slice_ok && topology_ok &&
        (!spec.topology.ici.twisted_torus || !network::twistable(spec.slice))) {
        r.error("twisted_torus",
                fmt::format("{} slice {} cannot be twisted (n x n x 2n or n x 2n x 2n, n >= 4, on a "
                            "topology with twisted tori)",
                            spec.topology.name, spec.slice.to_string()));
    }

    std::size_t errors_before_mesh = d.size();
    if (slice_ok) parse_mesh(r, spec, d, slices_ok);
    bool mesh_ok = slice_ok && d.size() == errors_before_mesh;

    // training
    std::size_t errors_before_training = d.size();
    if (!r.has("training")) r.error("training", "missing required key");
    MapReader t(r.has("training") ? r.raw("training") : YAML::Node(YAML::NodeType::Map), file,
                r.path_of("training"), d, run_keys_under("training"));
    std::optional<bool> scan_layers;
    if (t.ok() && r.has("training")) {
        read_batch(t, spec);
        bool text = model_ok && !spec.model.is_vit();
        spec.training.seq_len =
            static_cast<int>(t.integer(training_key("training.seq_len"), text).value_or(0));
        if (text && spec.model.position == workload::PositionEmbedding::learned &&
            spec.training.seq_len > 0 && spec.training.seq_len > spec.model.max_positions) {
            t.error("seq_len", fmt::format("{} exceeds the model's max_positions ({})", spec.training.seq_len,
                                           spec.model.max_positions));
        }
        auto& training = spec.training;
        training.microbatches = static_cast<int>(
            t.integer(training_key("training.microbatches")).value_or(training.microbatches));
        if (auto dt = t.choice(training_key("training.dtype")))
            training.dtype = static_cast<core::DType>(*dt);
        if (auto dt = t.choice(training_key("training.param_dtype")))
            training.param_dtype = static_cast<core::DType>(*dt);
        if (auto o = t.choice(training_key("training.optimizer")))
            training.optimizer = static_cast<workload::Optimizer>(*o);
        if (auto m = t.choice(training_key("training.remat"))) {
            training.remat = static_cast<workload::Remat>(*m);
        }
        if (auto k = t.choice(training_key("training.decoder_layer_input")))
            training.decoder_layer_input = static_cast<workload::Keep>(*k);
        // remat custom's places (training_key is consteval: one line per key).
        auto place = [&](workload::ActivationName name, std::optional<std::size_t> k) {
            if (k) training.custom_keep[static_cast<std::size_t>(name)] = static_cast<workload::Keep>(*k);
        };
        place(workload::ActivationName::qkv_proj, t.choice(training_key("training.qkv_proj")));
        place(workload::ActivationName::context, t.choice(training_key("training.context")));
        place(workload::ActivationName::out_proj, t.choice(training_key("training.out_proj")));
        place(workload::ActivationName::mlpwi, t.choice(training_key("training.mlpwi")));
        place(workload::ActivationName::mlpwo, t.choice(training_key("training.mlpwo")));
        if (auto a = t.choice(training_key("training.attention")))
            training.attention = workload::kAttentionChoices[*a] == "flash"
                                     ? workload::Attention::flash
                                     : workload::Attention::dot_product;
        if (auto dt = t.choice(training_key("training.master_dtype")))
            training.master_dtype = static_cast<core::DType>(*dt);
        training.tensor_sequence =
            t.boolean(training_key("training.tensor_sequence")).value_or(training.tensor_sequence);
        training.flash_block =
            static_cast<int>(t.integer(training_key("training.sa_block_q")).value_or(training.flash_block));
        training.capacity_factor =
            t.number(training_key("training.capacity_factor")).value_or(training.capacity_factor);
        training.sparse_matmul =
            t.boolean(training_key("training.sparse_matmul")).value_or(training.sparse_matmul);
        training.megablox = t.boolean(training_key("training.megablox")).value_or(training.megablox);
        training.tile_batch_seq = static_cast<int>(
            t.integer(training_key("training.tile_batch_seq")).value_or(training.tile_batch_seq));
        training.load_balance_loss_weight = t.number(training_key("training.load_balance_loss_weight"))
                                                .value_or(training.load_balance_loss_weight);
        training.pipeline_microbatches =
            static_cast<int>(t.integer(training_key("training.num_pipeline_microbatches"))
                                 .value_or(training.pipeline_microbatches));
        training.layers_per_pipeline_stage =
            static_cast<int>(t.integer(training_key("training.num_layers_per_pipeline_stage"))
                                 .value_or(training.layers_per_pipeline_stage));
        training.pipeline_fsdp_ag_per_repeat = t.boolean(training_key("training.pipeline_fsdp_ag_per_repeat"))
                                                   .value_or(training.pipeline_fsdp_ag_per_repeat);
        training.pipeline_fsdp_ag_once = t.boolean(training_key("training.pipeline_fsdp_ag_once"))
                                             .value_or(training.pipeline_fsdp_ag_once);
        scan_layers = t.boolean(training_key("training.scan_layers"));
        if (auto l = t.choice(training_key("training.loss_labels")))
            training.loss_labels = static_cast<workload::LossLabels>(*l);
    }
    bool training_ok = t.ok() && d.size() == errors_before_training;

    if (r.has("runtime")) {
        MapReader rt(r.raw("runtime"), file, r.path_of("runtime"), d, run_keys_under("runtime"));
        auto& runtime = spec.runtime;
        if (auto f = rt.choice(runtime_key("runtime.framework")))
            runtime.framework = static_cast<parallel::Framework>(*f);
        runtime.async_collectives = rt.boolean(runtime_key("runtime.async_collectives"));
        runtime.host_overhead = rt.quantity(runtime_key("runtime.host_overhead"));
        runtime.prefetch_depth = static_cast<int>(
            rt.integer(runtime_key("runtime.prefetch_depth")).value_or(runtime.prefetch_depth));
        runtime.compile_time = rt.quantity(runtime_key("runtime.compile_time"));
        runtime.collective_matmul = rt.boolean(runtime_key("runtime.collective_matmul"));
        runtime.fp32_reduce_scatter =
            rt.boolean(runtime_key("runtime.fp32_reduce_scatter")).value_or(runtime.fp32_reduce_scatter);
        runtime.gather_via_all_reduce = rt.boolean(runtime_key("runtime.gather_via_all_reduce"));
        runtime.dcn_overlap = rt.boolean(runtime_key("runtime.dcn_overlap")).value_or(runtime.dcn_overlap);
        runtime.recompile_every_step =
            rt.boolean(runtime_key("runtime.recompile_every_step")).value_or(runtime.recompile_every_step);
        if (auto init = rt.choice(runtime_key("runtime.host_init"))) runtime.host_full_init = *init == 0;
    }
    // JAX scans its layers (MaxText's scan_layers defaults to true); PyTorch modules run them one by one.
    spec.training.scan_layers = scan_layers.value_or(spec.runtime.framework == parallel::Framework::jax);
    if (r.has("report")) {
        MapReader rep(r.raw("report"), file, r.path_of("report"), d, run_keys_under("report"));
        spec.mfu_attention = rep.boolean(run_key("report.mfu_attention")).value_or(spec.mfu_attention);
    }
    if (r.has("calibration")) {
        spec.calibration = parse_calibration(r.raw("calibration"), file, r.path_of("calibration"), base_dir,
                                             spec.calibration, d);
    }
    if (model_ok && training_ok) read_whole_run(r, file, spec, d);
    // Semantic checks need every part to be valid first.
    if (semantic_checks && model_ok && topology_ok && mesh_ok && training_ok)
        check_sharding(r, path, spec, d);
    return spec;
}

RunSpec reparse_batch(const YAML::Node& root, const std::string& file, const RunSpec& parsed,
                      Diagnostics& d) {
    const std::string path;
    RunSpec spec = parsed;
    spec.source = file;
    MapReader r(root, file, path, d, run_keys_under(""));
    spec.name = r.string("name", false).value_or(fs::path(file).stem().string());
    std::size_t errors_before_training = d.size();
    MapReader t(r.raw("training"), file, r.path_of("training"), d, run_keys_under("training"));
    read_batch(t, spec);
    if (!t.ok() || d.size() != errors_before_training) return spec;
    read_whole_run(r, file, spec, d);
    check_sharding(r, path, spec, d);
    return spec;
}

RunSpec parse_run_node(const YAML::Node& root, const std::string& file, const fs::path& base_dir,
                       Diagnostics& d, LoadCache* cache, bool semantic_checks) {
    return parse_run(root, file, base_dir, "", d, cache, semantic_checks);
}

std::shared_ptr<LoadCache> make_load_cache() {
    return std::make_shared<LoadCache>();
}

RunSpec load_run_file(const std::string& path) {
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

RunSpec load_run_text(const std::string& yaml_text, const std::string& name, const fs::path& base_dir) {
    Diagnostics d;
    YAML::Node root = detail::load_yaml_string(yaml_text, name, d);
    if (!d.empty()) throw core::UserError(d);
    return finish(parse_run(root, name, base_dir, "", d), d);
}

}  // namespace podsim::config
