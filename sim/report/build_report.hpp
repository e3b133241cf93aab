#pragma once

#include <string>
#include <utility>
#include <vector>

#include "cost/cost_model.hpp"
#include "hardware/topology_spec.hpp"
#include "memory/host_memory.hpp"
#include "memory/memory_profile.hpp"
#include "network/mesh_spec.hpp"
#include "parallel/device_program.hpp"
#include "parallel/runtime_spec.hpp"
#include "report/run_report.hpp"
#include "scheduler/timeline.hpp"
#include "workload/model_spec.hpp"
#include "workload/training_spec.hpp"

namespace podsim::report {

struct ReportInput {
    std::string name;
    const workload::ModelSpec& model;
    const workload::TrainingSpec& training;
    const parallel::RuntimeSpec& runtime;
    const hardware::TopologySpec& topology;
    const hardware::SliceShape& slice;
    int slices = 1;
    const network::MeshSpec& mesh;
    bool mfu_attention = false;
    const parallel::DeviceProgram& program;
    const std::vector<cost::OpCost>& costs;  // per op of program (matmul shape classes)
    const scheduler::Timeline& timeline;
    const memory::MemoryProfile& memory;
    const memory::HostMemory& host;
    double compile_time_s = 0.0;
    // A folded simulation (run/fold.hpp): periods inserted into the timeline; null for none.
    const std::vector<scheduler::Splice>* splices = nullptr;
    // With pipeline stages: when the program's compute waits for another stage (run/stages.hpp); the
    // idle time in them is the pipeline bubble. Null for none.
    const std::vector<std::pair<core::Time, core::Time>>* pipeline_waits = nullptr;
};

// Model FLOPs per step: 6·N·tokens, plus 12·L·S·(heads·head_dim) per token when
// attention is counted (PaLM, Chowdhery et al. 2022, appendix B). N counts the parameters a token
// goes through: of an MoE layer's routed experts only num_experts_per_tok (MaxText's convention).
double model_flops_per_step(const workload::ModelSpec& model, const workload::TrainingSpec& training,
                            bool with_attention);

RunReport build_report(const ReportInput& input);
// build_report's memory section, of a profile of `program`.
MemoryReport memory_report(const memory::MemoryProfile& memory, const parallel::DeviceProgram& program);

}  // namespace podsim::report
