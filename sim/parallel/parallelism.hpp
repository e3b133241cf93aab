#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "network/mesh_spec.hpp"
#include "workload/op.hpp"
#include "workload/op_graph.hpp"

namespace podsim::parallel {

// The parallelism kinds. Everything that differs between them is in their declaration
// (kParallelisms below): partitioning, sharding errors, mesh parsing, `explain` and sweeps read it,
// and no module spells a kind's name. A new kind is one enum value, one declaration and, when it
// inserts a collective no other kind does, that collective's rule.
enum class Parallelism : std::uint8_t { data, fsdp, tensor, pipeline, expert };

// Which collectives an axis of the kind inserts, and where (the partitioner's rules).
enum class CollectiveRule : std::uint8_t {
    // Gradients all-reduced once per step, after the last microbatch (over ICI, then DCN).
    all_reduce_gradients,
    // Parameters stored split over the axis: each parameter group all-gathered before its first use
    // in the forward and again before its first use in the backward (remat included), its gradients
    // reduce-scattered after its last backward op, in every microbatch (ZeRO-3).
    gather_parameters,
    // Partial sums of a matmul contracting a split dimension all-reduced after it; with
    // training.tensor_sequence an all-gather before each column-parallel matmul and a reduce-scatter
    // after each row-parallel one instead (Megatron sequence parallelism).
    reduce_partial_sums,
    // The layers split into stages, each a program of its own: a stage's activations go to the next
    // stage (and its input gradients to the previous one) by collective-permute, once per microbatch
    // and repeat (MaxText layers/pipeline.py). The parts of the step outside the pipeline (embedding,
    // head, loss) run on every stage with the stage axis splitting their batch, and their gradients are
    // all-reduced over it (MaxText's logical rule activation_embed_and_logits_batch maps `stage`).
    pass_activations,
    // Tokens sent to the chips of their experts and back: an all-to-all (ragged for dropless
    // experts) around the expert matmuls of an MoE layer, in the forward and the backward.
    exchange_tokens,
    // The gradients of the parameters it does not split (all but the routed experts', which it
    // splits) all-reduced once per step: it splits the batch as a data axis does.
    all_reduce_unsplit_gradients,
};

// Sets of workload::Shard roles and of collective rules, as bits.
using ShardSet = std::uint32_t;
using RuleSet = std::uint32_t;
constexpr ShardSet shards(std::initializer_list<workload::Shard> roles) {
    ShardSet set = 0;
    for (workload::Shard role : roles) set |= ShardSet{1} << static_cast<unsigned>(role);
    return set;
}
constexpr RuleSet rules(std::initializer_list<CollectiveRule> list) {
    RuleSet set = 0;
    for (CollectiveRule rule : list) set |= RuleSet{1} << static_cast<unsigned>(rule);
    return set;
}

// One parallelism kind.
struct ParallelismKind {
    Parallelism kind;
    std::string_view name;  // the mesh axis (mesh.ici.<name>, mesh.dcn.<name>), and the resource ici:<name>
    // MaxText's mesh axis and config keys (MaxText configs/base.yml: mesh_axes,
    // ici_<x>_parallelism, dcn_<x>_parallelism).
    std::string_view maxtext_axis;
    std::string_view maxtext_ici;
    std::string_view maxtext_dcn;
    int maxtext_rank = 0;               // its place in MaxText's mesh_axes (later = more local)
    bool across_slices = false;         // may be an axis of mesh.dcn
    ShardSet splits = 0;                // the workload::Shard roles whose extents the axis divides
    RuleSet inserts = 0;                // the collectives it inserts
    std::string_view splits_text;       // explain: what it splits
    std::string_view collectives_text;  // explain: the collectives it inserts, where
    std::string_view source;
};

using workload::Shard;
inline constexpr ParallelismKind kParallelisms[] = {
    {.kind = Parallelism::data,
     .name = "data",
     .maxtext_axis = "data",
     .maxtext_ici = "ici_data_parallelism",
     .maxtext_dcn = "dcn_data_parallelism",
     .maxtext_rank = 1,
     .across_slices = true,
     .splits = shards({Shard::batch, Shard::batch_no_expert}),
     .inserts = rules({CollectiveRule::all_reduce_gradients}),
     .splits_text = "the batch",
     .collectives_text = "one all-reduce of each parameter group's gradients (param_dtype) after the last "
                         "microbatch; over ICI, then over DCN for mesh.dcn.data",
     .source = "data parallelism (Krizhevsky 2014); JAX/GSPMD batch sharding"},
    {.kind = Parallelism::fsdp,
     .name = "fsdp",
     .maxtext_axis = "fsdp",
     .maxtext_ici = "ici_fsdp_parallelism",
     .maxtext_dcn = "dcn_fsdp_parallelism",
     .maxtext_rank = 3,
     .splits = shards({Shard::batch, Shard::batch_no_expert, Shard::param}),
     .inserts = rules({CollectiveRule::gather_parameters}),
     .splits_text = "the batch, and parameters, gradients and optimizer state",
     .collectives_text = "per microbatch: an all-gather of each parameter group before its first forward use "
                         "and another before its first backward use (recompute included), a reduce-scatter "
                         "of its gradients after its last backward op",
     .source = "ZeRO-3 (Rajbhandari et al. 2020); MaxText `fsdp` axis (configs/base.yml logical_axis_rules)"},
    {.kind = Parallelism::tensor,
     .name = "tensor",
     .maxtext_axis = "tensor",
     .maxtext_ici = "ici_tensor_parallelism",
     .maxtext_dcn = "dcn_tensor_parallelism",
     .maxtext_rank = 8,
     .splits = shards({Shard::tensor, Shard::param}),
     .inserts = rules({CollectiveRule::reduce_partial_sums}),
     .splits_text = "heads, KV heads, the MLP width and the vocabulary of the embedding and LM head",
     .collectives_text =
         "an all-reduce of the activations after each row-parallel matmul and of the input "
         "gradient of each column-parallel one; with training.tensor_sequence an all-gather "
         "before each column-parallel matmul and a reduce-scatter after each row-parallel one",
     .source = "Megatron-LM (Shoeybi et al. 2019; Korthikanti et al. 2022 for sequence parallelism)"},
    {.kind = Parallelism::pipeline,
     .name = "pipeline",
     .maxtext_axis = "stage",
     .maxtext_ici = "ici_pipeline_parallelism",
     .maxtext_dcn = "dcn_pipeline_parallelism",
     .maxtext_rank = 2,
     .across_slices = true,
     .inserts = rules({CollectiveRule::pass_activations}),
     .splits_text =
         "the layers, into stages (training.num_layers_per_pipeline_stage consecutive layers per stage "
         "and repeat); outside the pipeline (embedding, head, loss) the batch",
     .collectives_text =
         "a collective-permute of each microbatch's activations to the next stage in the forward "
         "and of its input gradient to the previous stage in the backward; an all-reduce of the "
         "embedding's and head's gradients",
     .source = "GPipe (Huang et al. 2019); MaxText layers/pipeline.py (GPipe and circular schedules)"},
    {.kind = Parallelism::expert,
     .name = "expert",
     .maxtext_axis = "expert",
     .maxtext_ici = "ici_expert_parallelism",
     .maxtext_dcn = "dcn_expert_parallelism",
     .maxtext_rank = 10,
     .across_slices = true,
     .splits = shards({Shard::batch, Shard::expert}),
     .inserts = rules({CollectiveRule::exchange_tokens, CollectiveRule::all_reduce_unsplit_gradients}),
     .splits_text =
         "the routed experts of every MoE layer (and their weights, gradients and optimizer state), and "
         "the batch outside the experts",
     .collectives_text =
         "an all-to-all of the dispatched tokens before each MoE layer's experts and of their "
         "outputs after them (ragged for dropless experts), forward and backward; an all-reduce of "
         "the other parameters' gradients after the last microbatch",
     .source = "GShard (Lepikhin et al. 2020); MaxText layers/moe.py and its `expert` axis"},
};

constexpr const ParallelismKind& parallelism(Parallelism kind) {
    return kParallelisms[static_cast<std::size_t>(kind)];
}
static_assert(parallelism(Parallelism::expert).kind == Parallelism::expert, "declarations in enum order");

constexpr bool splits(const ParallelismKind& kind, workload::Shard role) {
    return (kind.splits >> static_cast<unsigned>(role)) & 1u;
}
constexpr bool inserts(const ParallelismKind& kind, CollectiveRule rule) {
    return (kind.inserts >> static_cast<unsigned>(rule)) & 1u;
}

// The kind whose mesh axis is called `name`, or null.
const ParallelismKind* parallelism_named(std::string_view name);
// The kind whose MaxText config key is `key` (ici_fsdp_parallelism, ...), or null; `dcn` tells
// which level the key sets.
const ParallelismKind* parallelism_of_maxtext_key(std::string_view key, bool* dcn);

// Sizes of a kind's axes in a mesh: ICI and DCN together, ICI only.
long axis_size(const network::MeshSpec& mesh, Parallelism kind);
long ici_axis_size(const network::MeshSpec& mesh, Parallelism kind);

// The product of the (ICI and DCN) sizes of every kind that splits `role`, in declaration order.
long divisor(const network::MeshSpec& mesh, workload::Shard role);
// What a mesh divides parameter groups by, its axis sizes looked up once (a memory estimate asks for
// every parameter group of the model).
struct ParamSplit {
    // A group's parameters, gradients and optimizer state are divided by the axes of every kind that
    // splits Shard::param, but a kind that splits tensor-parallel dimensions (Shard::tensor) only for
    // groups sharded along them (ParamGroup::tensor_sharded).
    long divisor_unsharded = 1;
    long divisor_tensor_sharded = 1;
    long experts = 1;  // divisor(mesh, Shard::expert): the routed experts' parameters also split by it
    long divisor(const workload::ParamGroup& group) const {
        return group.tensor_sharded ? divisor_tensor_sharded : divisor_unsharded;
    }
    // A group's parameters per chip.
    double shard(const workload::ParamGroup& group) const;
};
ParamSplit param_split(const network::MeshSpec& mesh);
// The kinds that split `role`, as "data x fsdp".
std::string split_by_text(workload::Shard role);

// The MaxText config keys of every kind (ici_data_parallelism, dcn_data_parallelism, ...).
std::vector<std::string> maxtext_keys();

// The mesh axis names, in declaration order ("data, fsdp and tensor").
std::vector<std::string> axis_names();
std::string axis_names_text();
// Those that may be axes of mesh.dcn.
std::vector<std::string> dcn_axis_names();

// The kind that inserts `rule`: every rule has one.
const ParallelismKind& kind_inserting(CollectiveRule rule);

// `podsim explain parallelism`: every kind with its names, what it splits and its collectives.
std::string explain_parallelism();

}  // namespace podsim::parallel
