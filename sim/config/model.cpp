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

workload::ModelSpec load_model_file(const std::string& path) {
    Diagnostics d;
    YAML::Node root = detail::load_yaml_file(path, d);
    workload::ModelSpec m;
    if (d.empty()) m = parse_model(root, path, "", d);
    core::throw_if_errors(d);
    return m;
}

}  // namespace podsim::config
