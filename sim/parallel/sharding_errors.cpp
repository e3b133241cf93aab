#include "parallel/sharding_errors.hpp"

#include <algorithm>
#include <variant>

#include <fmt/format.h>

#include "network/axis_mapping.hpp"
#include "parallel/parallelism.hpp"
#include "parallel/pipeline_schedule.hpp"

namespace podsim::parallel {

std::vector<ShardingError> sharding_errors(const workload::ModelSpec& m, const workload::TrainingSpec& t,
                                           const hardware::TopologySpec& topology,
                                           const hardware::SliceShape& slice, int slices,
                                           const network::MeshSpec& mesh) {
    std::vector<ShardingError> errors;
    // The batch of a microbatch splits over every kind that splits Shard::batch.
    const long batch_shards = divisor(mesh, workload::Shard::batch);
    if (t.microbatches <= 0 || t.global_batch % t.microbatches != 0) {
        errors.push_back({"training.microbatches", fmt::format("{} does not divide the global batch {}",
                                                               t.microbatches, t.global_batch)});
    } else if ((t.global_batch / t.microbatches) % batch_shards != 0) {
        errors.push_back(
            {"training.global_batch",
             fmt::format("the batch of each microbatch ({}) is split over the data-parallel axes "
                         "({} = {}) and must be divisible by it",
                         t.global_batch / t.microbatches, split_by_text(workload::Shard::batch),
                         batch_shards)});
    }
    // Every dimension a kind splitting Shard::tensor divides (workload/lower.cpp) against its axis.
    for (const auto& kind : kParallelisms) {
        if (!splits(kind, workload::Shard::tensor)) continue;
        const long tensor = axis_size(mesh, kind.kind);
        if (tensor <= 1) continue;
        const std::string key = fmt::format("mesh.{}", kind.name);
        if (m.heads % tensor != 0) {
            errors.push_back({key, fmt::format("model.heads ({}) is not divisible by the {} axis ({})",
                                               m.heads, kind.name, tensor)});
        }
        if (m.kv_heads % tensor != 0 && tensor % m.kv_heads != 0) {
            errors.push_back({key, fmt::format("model.kv_heads ({}) is not divisible by the {} axis "
                                               "({}), nor the axis by it",
                                               m.kv_heads, kind.name, tensor)});
        }
        if (t.tensor_sequence && (m.tokens_per_sample(t.seq_len) % tensor) != 0) {
            errors.push_back({"training.tensor_sequence",
                              fmt::format("the sequence ({} tokens) is not divisible by the {} axis ({})",
                                          m.tokens_per_sample(t.seq_len), kind.name, tensor)});
        }
        // Dense MLP layers split d_ff; MoE layers base_moe_mlp_dim (below; d_ff when not given).
        if (m.moe_layers() < m.layers && m.d_ff % tensor != 0) {
            errors.push_back({key, fmt::format("model.d_ff ({}) is not divisible by the {} axis ({})", m.d_ff,
                                               kind.name, tensor)});
        }
    }
    // Experts over the kinds that split them (MaxText layers/moe.py: num_experts // expert parallelism).
    for (const auto& kind : kParallelisms) {
        if (!splits(kind, workload::Shard::expert)) continue;
        const long experts = axis_size(mesh, kind.kind);
        if (experts <= 1) continue;
        const std::string key = fmt::format("mesh.{}", kind.name);
        if (mesh.ici_size_of(std::string(kind.name)) > 1 && mesh.dcn_size_of(std::string(kind.name)) > 1) {
            errors.push_back(
                {key, fmt::format("an {} axis over ICI and DCN at once is not modelled: split it over "
                                  "one of them",
                                  kind.name)});
            continue;  // its size over both would only bring errors in its wake
        }
        if (!m.is_moe()) {
            errors.push_back(
                {key, fmt::format("the model has no experts to split over the {} axis ({}): give "
                                  "model.num_experts",
                                  kind.name, experts)});
        } else if (m.experts % experts != 0) {
            errors.push_back({key, fmt::format("model.num_experts ({}) is not divisible by the {} axis ({})",
                                               m.experts, kind.name, experts)});
        } else if (!t.sparse_matmul && t.capacity_factor <= 0) {
            errors.push_back(
                {"training.capacity_factor",
                 fmt::format("every expert on every token (sparse_matmul false, no capacity_factor) "
                             "is not modelled with an {} axis: give a capacity_factor or sparse_matmul",
                             kind.name)});
        }
    }
    if (m.is_moe()) {
        // Dropping experts (MaxText layers/moe.py generate_masks) with too small a factor take no token.
        const int tokens = m.tokens_per_sample(t.seq_len);
        if (!t.sparse_matmul && t.capacity_factor > 0 && tokens > 0 &&
            m.expert_capacity(tokens, t.capacity_factor) < 1) {
            errors.push_back(
                {"training.capacity_factor",
                 fmt::format(
                     "{} leaves each expert int(ceil({} token{} x {} / {} experts) x {}) = 0 tokens of a "
                     "sequence: give at least {:.6g} (or 0 or below for dropless)",
                     t.capacity_factor, tokens, tokens == 1 ? "" : "s", m.experts_per_token, m.experts,
                     t.capacity_factor, 1.0 / m.tokens_per_expert(tokens))});
        }
        for (const auto& kind : kParallelisms) {
            if (!splits(kind, workload::Shard::tensor)) continue;
            const long tensor = axis_size(mesh, kind.kind);
            if (tensor > 1 && m.moe_d_ff % tensor != 0) {
                errors.push_back(
                    {fmt::format("mesh.{}", kind.name),
                     fmt::format("each expert's MLP width, model.base_moe_mlp_dim ({}; model.d_ff when it is "
                                 "not given), is not divisible by the {} axis ({})",
                                 m.moe_d_ff, kind.name, tensor)});
            }
        }
    }
    // Pipeline stages (MaxText's rules, layers/pipeline.py and configs/base.yml).
    const ParallelismKind& staging = kind_inserting(CollectiveRule::pass_activations);
    const long stages = axis_size(mesh, staging.kind);
    std::int64_t microbatches = 1;  // that the step's layers run for (kMaxLayerPasses)
    if (stages > 1) {
        const std::string key = fmt::format("mesh.{}", staging.name);
        const PipelineSchedule p = pipeline_schedule(t, mesh, m.layers);
        microbatches = p.microbatches;
        if (mesh.ici_size_of(std::string(staging.name)) > 1 &&
            mesh.dcn_size_of(std::string(staging.name)) > 1) {
            errors.push_back({key,
                              "pipeline stages over ICI and DCN at once are not modelled: split the "
                              "pipeline axis over one of them"});
        }
        if (m.layers % (stages * p.layers_per_stage) != 0) {
            errors.push_back({key, fmt::format("model.layers ({}) is not divisible by the {} stages x "
                                               "training.num_layers_per_pipeline_stage ({})",
                                               m.layers, stages, p.layers_per_stage)});
        }
        if (p.microbatches % stages != 0) {
            errors.push_back(
                {"training.num_pipeline_microbatches",
                 fmt::format("{} is not a multiple of the {} pipeline stages", p.microbatches, stages)});
        } else if (t.global_batch % p.microbatches != 0 ||
                   (t.global_batch / p.microbatches) % batch_shards != 0) {
            errors.push_back(
                {"training.global_batch",
                 fmt::format("the batch ({}) splits into {} pipeline microbatches, each split over the "
                             "data-parallel axes ({} = {}): it must be divisible by {}",
                             t.global_batch, p.microbatches, split_by_text(workload::Shard::batch),
                             batch_shards, static_cast<long>(p.microbatches) * batch_shards)});
        }
        if (t.microbatches != 1) {
            errors.push_back({"training.microbatches",
                              "gradient accumulation around a pipeline is not modelled: give the pipeline's "
                              "microbatches as training.num_pipeline_microbatches"});
        }
        if (workload::offloads(t)) {
            errors.push_back({"training.remat",
                              fmt::format("'{}' offloads activations to host memory, which is not modelled "
                                          "with pipeline stages",
                                          workload::remat_name(t.remat))});
        }
    }
    if (t.pipeline_fsdp_ag_per_repeat && t.pipeline_fsdp_ag_once) {
        errors.push_back({"training.pipeline_fsdp_ag_once",
                          "give pipeline_fsdp_ag_once or pipeline_fsdp_ag_per_repeat, not both"});
    }
    if (workload::offloads(t) && topology.host.transfer_bandwidth_per_chip <= 0) {
        errors.push_back({"training.remat",
                          fmt::format("'{}' offloads activations to host memory, but topology {} gives no "
                                      "host.transfer_bandwidth_per_chip",
                                      workload::remat_name(t.remat), topology.name)});
    }
    if (slices > 1 && topology.dcn.bandwidth_per_chip <= 0) {
        errors.push_back(
            {"slices", fmt::format("{} slices need a DCN, but topology {} gives no dcn bandwidth", slices,
                                   topology.name)});
    }
    if (mesh.dcn_size() != slices) {
        errors.push_back({"mesh.dcn", fmt::format("the DCN axes hold {} slices but slices is {}",
                                                  mesh.dcn_size(), slices)});
    }
    if (mesh.ici_size() == hardware::slice_devices(topology, slice) ||
        hardware::devices_per_chip_in_use(topology, slice, mesh.ici_size()) <
            topology.chip.devices_per_chip) {
        auto mapping = network::map_mesh_axes(topology, slice, mesh);
        if (auto* error = std::get_if<std::string>(&mapping)) errors.push_back({"mesh", *error});
    }
    const std::int64_t layer_passes = static_cast<std::int64_t>(m.layers) *
                                      static_cast<std::int64_t>(std::max(t.microbatches, 1)) * microbatches;
    if (layer_passes > kMaxLayerPasses) {
        errors.push_back(
            {"model.layers",
             fmt::format("{} layers x {} microbatches = {} layer passes per step; "
                         "podsim simulates at most {}",
                         m.layers, t.microbatches * microbatches, layer_passes, kMaxLayerPasses)});
    }
    return errors;
}

}  // namespace podsim::parallel
