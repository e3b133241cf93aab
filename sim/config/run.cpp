#include "config/load.hpp"

#include <fmt/format.h>

#include "config/parse.hpp"
#include "config/schema.hpp"
#include "config/whole_run_block.hpp"
#include "config/yaml_reader.hpp"
#include "network/torus.hpp"
#include "parallel/sharding_errors.hpp"

namespace podsim::config {

namespace fs = std::filesystem;
using core::Diagnostics;
using core::Dimension;
using detail::MapReader;

namespace {

RunSpec finish(RunSpec spec, const Diagnostics& d) {
    core::throw_if_errors(d);
    return spec;
}

}  // namespace

RunSpec parse_run(const YAML::Node& root, const std::string& file, const fs::path& base_dir,
                  const std::string& path, Diagnostics& d, LoadCache* cache) {
    RunSpec spec;
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
        spec.runtime.collective_matmul = rt.boolean("collective_matmul");
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
    if (r.has("whole_run") && model_ok && training_ok)
        spec.whole_run = detail::parse_whole_run(r.raw("whole_run"), file, r.path_of("whole_run"), spec, d);

    // Semantic checks need every part to be valid first.
    if (model_ok && topology_ok && mesh_ok && training_ok) {
        for (const auto& e : parallel::sharding_errors(spec.model, spec.training, spec.topology, spec.slice,
                                                       spec.slices, spec.mesh)) {
            std::string top = e.key_path.substr(0, e.key_path.find('.'));
            std::string full = path.empty() ? e.key_path : path + "." + e.key_path;
            d.error(r.location(top), full, e.message);
        }
    }
    return spec;
}

RunSpec parse_run_node(const YAML::Node& root, const std::string& file, const fs::path& base_dir,
                       Diagnostics& d, LoadCache* cache) {
    return parse_run(root, file, base_dir, "", d, cache);
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
