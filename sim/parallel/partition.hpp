#pragma once

#include <cstdint>
#include <vector>

#include "network/axis_mapping.hpp"
#include "network/mesh_spec.hpp"
#include "parallel/device_program.hpp"
#include "parallel/program_names.hpp"
#include "parallel/runtime_spec.hpp"
#include "workload/model_spec.hpp"
#include "workload/op_graph.hpp"
#include "workload/training_spec.hpp"

namespace podsim::parallel {

struct PartitionInput {
    const workload::OpGraph& graph;
    const workload::TrainingSpec& training;
    const network::MeshSpec& mesh;
    const std::vector<network::AxisMapping>& ici_axes;  // placement of mesh.ici, same order
    const RuntimeSpec& runtime;
    // Names shared with other programs partitioned from `graph`, or null for names of its own.
    ProgramNames* names = nullptr;
    // A GPU's streaming multiprocessors, which XLA:GPU's split-K rewrite fills (xla_gpu_split_k.hpp);
    // 0: a TPU, whose compiler has no such pass.
    int split_k_multiprocessors = 0;
};

// SPMD partitioning of one training step over the mesh, as GSPMD / PyTorch/XLA FSDP would:
//  - batch dimensions split over every data-parallel axis (data, fsdp, dcn data);
//  - tensor: heads and MLP width split (Megatron); a matmul contracting over a split dimension
//    yields partial sums, so an all-reduce over `tensor` follows it;
//  - fsdp (ZeRO-3): parameters, gradients and optimizer state split; each parameter group is
//    all-gathered before its first use in the forward and again in the backward (remat included),
//    and its gradient reduce-scattered after its last backward op;
//  - data: gradients all-reduced once per step (after the last microbatch), over ICI then DCN.
// Ops come out in program order: the order XLA's sequential schedule runs them.
DeviceProgram partition(const PartitionInput& input);

// How an op's sizes follow from the microbatch's samples: what `partition` did to arrive at them.
// Rules run in program order, so a rule that reads another op reads it as partition did.
struct OpSizing {
    enum class Rule : std::uint8_t {
        fixed,              // sizes that do not depend on the batch (FSDP and gradient collectives)
        compute,            // graph op `ref`'s compute op
        part,               // `fraction` of it (collective matmul), without its output if zero_output
        collective_input,   // collective bytes: graph op `ref`'s first input (x fraction: the chips of an
                            // all-to-all)
        collective_output,  // collective bytes: device op `ref`'s output, split over tensor after if
                            // divide_source (a sequence-parallel reduce-scatter)
        copy,               // bytes: device op `ref`'s output (remat offload)
    };
    Rule rule = Rule::fixed;
    bool zero_output = false;
    bool divide_source = false;
    int ref = -1;
    double fraction = 1.0;
};

// A program with how to size it for another batch (resize).
struct ResizableProgram {
    DeviceProgram program;
    std::vector<OpSizing> sizing;  // by op
};
ResizableProgram partition_resizable(const PartitionInput& input);

// Sizes `program`, partitioned by partition_resizable from an input that differs from `input` in
// nothing but the global batch, for `input`'s: the ops partition(input) gives, number for number.
// Configs of a sweep that differ only in the batch partition once (run::SimulationCache).
void resize(DeviceProgram& program, const std::vector<OpSizing>& sizing, const PartitionInput& input);

// Per-chip parameters, gradients and optimizer state of `groups` (DeviceProgram::params_bytes and
// the rest), summed in the order given: `partition` sums the graph's groups so.
struct StateBytes {
    double params = 0.0, grads = 0.0, optimizer = 0.0;
};
StateBytes state_bytes(const std::vector<const workload::ParamGroup*>& groups,
                       const workload::TrainingSpec& training, const network::MeshSpec& mesh);

}  // namespace podsim::parallel
