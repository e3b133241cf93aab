#pragma once

#include <string>
#include <vector>

namespace podsim::report {

struct CategoryStat {
    std::string category;
    long count = 0;
    double time_s = 0.0;
    double fraction = 0.0;  // of all device-op time (as XProf's HLO op stats count it)
};

struct ResourceStat {
    std::string name;
    double busy_s = 0.0;
    double utilization = 0.0;  // busy / step
};

struct MemoryReport {
    double peak_bytes = 0.0;
    double capacity_bytes = 0.0;  // what the runtime grants XLA per chip (bytes_limit)
    double hbm_bytes = 0.0;       // HBM per chip
    bool fits = true;
    double overflow_bytes = 0.0;
    double margin_bytes = 0.0;        // capacity - peak (negative when it does not fit)
    double host_offload_bytes = 0.0;  // offloaded residuals in pinned host memory, per chip
    double params_bytes = 0.0;
    double grads_bytes = 0.0;
    double optimizer_bytes = 0.0;
    double activations_bytes = 0.0;
    double gathered_weights_bytes = 0.0;
    double collective_buffers_bytes = 0.0;
    double temporaries_bytes = 0.0;
    std::string peak_op;
    double peak_time_s = 0.0;
};

// Everything `podsim run` reports (schema podsim.report/v1).
struct RunReport {
    std::string name;
    std::string model;
    std::string topology;
    std::string slice;
    int slices = 1;
    std::string mesh;
    std::string framework;
    bool async_collectives = false;
    long chips = 0;  // mesh devices: chips x devices_per_chip (v2/v3: 2 per chip)
    int devices_per_chip = 1;
    long long params = 0;

    double step_time_s = 0.0;
    double tokens_per_step = 0.0;
    double tokens_per_s = 0.0;
    double model_flops_per_step = 0.0;
    double hardware_flops_per_step = 0.0;
    double peak_flops_per_chip = 0.0;
    double mfu = 0.0;
    double hfu = 0.0;
    std::string mfu_convention;

    MemoryReport memory;

    // Host RAM while creating the model, per host.
    double host_peak_bytes = 0.0;
    double host_capacity_bytes = 0.0;
    bool host_fits = true;
    int host_processes = 1;
    bool host_full_model = false;

    // FSDP all-gathers issued this many parameter groups ahead (0 without async FSDP), and whether
    // the HBM limit lowered it from runtime.prefetch_depth.
    int prefetch_depth = 0;
    bool prefetch_limited_by_memory = false;

    double compile_time_s = 0.0;  // not part of the step
    bool recompile_every_step = false;

    // Where the step went: these five add up to step_time_s.
    double compute_s = 0.0;
    double exposed_communication_s = 0.0;
    double host_s = 0.0;
    double pipeline_bubble_s = 0.0;  // the reported stage waiting for another stage
    double idle_s = 0.0;
    double communication_s = 0.0;             // union of all collective time
    double overlapped_communication_s = 0.0;  // of which hidden under compute

    double forward_s = 0.0;
    double backward_s = 0.0;
    double recompute_s = 0.0;
    double optimizer_s = 0.0;

    // Pipeline stages (one program each): the schedule, the stage whose time and the stage whose
    // memory the report shows (the one computing longest, the one with the highest peak), and each
    // stage's peak.
    int pipeline_stages = 1;
    std::string pipeline_schedule = "none";  // none, gpipe or circular
    int pipeline_microbatches = 0;
    int pipeline_repeats = 0;
    double pipeline_bubble_closed_form = 0.0;  // (stages - 1) / (repeats x microbatches + stages - 1)
    int time_stage = 0;
    int memory_stage = 0;
    std::vector<double> stage_peak_bytes;

    std::vector<CategoryStat> op_stats;
    // Matmul time by shape class (cost/matmul_shape.hpp): category is small, medium or large;
    // fraction is of all matmul time.
    std::vector<CategoryStat> matmul_shapes;
    std::vector<ResourceStat> resources;
    long ops = 0;
    unsigned long long events = 0;
};

}  // namespace podsim::report
