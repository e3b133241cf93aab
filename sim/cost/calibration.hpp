#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/quantity.hpp"
#include "cost/matmul_shape.hpp"
#include "parallel/runtime_spec.hpp"

namespace podsim::cost {

// Every tunable number of the cost model, in one place. Defaults and their sources are in
// calibration_parameters() (calibration.cpp); a run config's `calibration:` block overrides them by
// name, and `podsim calibrate` fits them.
struct Calibration {
    double mxu_efficiency = 0.0;                 // fraction of peak FLOP/s a large matmul reaches
    double mxu_medium_shape_factor = 0.0;        // multiplies it for medium matmuls (matmul_shape.hpp)
    double mxu_small_shape_factor = 0.0;         // and for small ones
    double hbm_efficiency = 0.0;                 // fraction of peak HBM bandwidth a fusion streams at
    double attention_traffic_pytorch_xla = 0.0;  // multiplies attention-score bytes under PyTorch/XLA
    double op_overhead = 0.0;                    // seconds per fused op (launch, pipeline fill)
    double host_overhead_jax = 0.0;              // seconds per step on the host
    double host_overhead_pytorch_xla = 0.0;
    double ici_link_efficiency = 0.0;     // fraction of one-way link bandwidth collectives reach
    double ici_hop_latency_factor = 0.0;  // multiplies the topology's hop latency
    double collective_overhead = 0.0;     // seconds per collective (launch and synchronisation)
    double dcn_efficiency = 0.0;
    double slice_step_jitter = 0.0;    // standard deviation of one slice's step, a fraction of it
    double compile_time_base = 0.0;    // seconds per compilation
    double compile_time_per_op = 0.0;  // seconds per fused op of the step program
    // Host work of a whole run (training_run module), per framework; graph size counts fused ops
    // of the program and tensors it syncs (docs/whole-run.md).
    double trace_per_op_pytorch_xla = 0.0;          // lazy tracing, per fused op, every step
    double hash_per_op_pytorch_xla = 0.0;           // graph hashing and cache lookup, per fused op
    double post_order_per_op_pytorch_xla = 0.0;     // RunPostOrder, per fused op
    double fetch_per_tensor_pytorch_xla = 0.0;      // FetchTensorData, per synced tensor
    double launch_per_execution_pytorch_xla = 0.0;  // gap left when everything else overlaps
    double trace_per_op_jax = 0.0;                  // jit tracing, per fused op, on a cache miss only
    double dispatch_per_executable_jax = 0.0;
    double dispatch_per_argument_jax = 0.0;
    double transfer_latency = 0.0;   // seconds per host<->device transfer
    double transfer_per_mib = 0.0;   // seconds per MiB moved between host and device
    double cache_load_per_op = 0.0;  // loading a compiled program from a persistent cache, per op
    double cpu_op_time = 0.0;        // an op without an XLA lowering, run on the host

    bool operator==(const Calibration&) const = default;
    static Calibration defaults();
    double attention_traffic(parallel::Framework framework, bool attention_dropout) const;  // 1 under JAX
    double mxu_shape_factor(MatmulShapeClass shape_class) const;  // 1 for large matmuls
    double host_overhead(parallel::Framework framework) const;
};

// fraction: dimensionless in [0, 1]; factor: dimensionless multiplier; time: seconds.
enum class ParameterUnit { fraction, factor, time };

struct CalibrationParameter {
    std::string_view name;
    ParameterUnit unit;
    double Calibration::*field;
    double default_value;
    double lower_bound;
    double upper_bound;
    std::string_view help;
    std::string_view source;
};

const std::vector<CalibrationParameter>& calibration_parameters();
const CalibrationParameter* find_calibration_parameter(std::string_view name);
std::vector<std::string> calibration_parameter_names();

}  // namespace podsim::cost
