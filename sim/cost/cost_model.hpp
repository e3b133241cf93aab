#pragma once

#include <vector>

#include "core/dtype.hpp"
#include "cost/calibration.hpp"
#include "cost/matmul_shape.hpp"
#include "hardware/topology_spec.hpp"
#include "parallel/device_program.hpp"
#include "parallel/runtime_spec.hpp"

namespace podsim::cost {

struct OpCost {
    double seconds = 0.0;          // what the op occupies its resource for
    double compute_seconds = 0.0;  // FLOPs term of the roofline (padded FLOPs at efficient peak)
    double memory_seconds = 0.0;   // HBM term of the roofline
    double padded_flops = 0.0;     // FLOPs the MXU actually spends after tile padding
    bool memory_bound = false;
    MatmulShapeClass shape_class = MatmulShapeClass::large;  // matmuls only
};

struct CostContext {
    const hardware::TopologySpec& topology;
    const parallel::RuntimeSpec& runtime;
    const Calibration& calibration;
    core::DType compute_dtype = core::DType::bf16;
    // The model drops out attention weights in training (model attention_dropout > 0).
    bool attention_dropout = false;
    int slices = 1;  // joined over DCN
};

// The mean of the largest of `n` independent standard normal draws (0 for one): how far the slowest
// of n jittering slices lands beyond the mean, in standard deviations.
double expected_max_of_normals(int n);

// Roofline per fused op:
//   time = max(padded FLOPs / (peak * mxu_efficiency * shape factor),
//              bytes / (hbm_bandwidth * hbm_efficiency)) + op_overhead
// The shape factor depends on the matmul's narrowest dimension (matmul_shape.hpp).
// Padding: each matmul's contracting (k) and output-column (n) dimensions are rounded up to the MXU
// tile (128x128 systolic array on v4) and its rows (m) to the 8-row sublane of the vector unit, so
// a 48-wide head dimension costs as much MXU time as 128.
// ICI collectives get no cost here (the network model times them); DCN collectives use the closed
// form of collectives/closed_form.hpp plus collective_overhead.
class CostModel {
  public:
    explicit CostModel(CostContext context);
    OpCost cost(const parallel::DeviceOp& op, const parallel::DeviceProgram& program) const;
    std::vector<OpCost> cost_all(const parallel::DeviceProgram& program) const;
    // Compiling the step program: runtime.compile_time, or base + per-op x device ops.
    double compile_seconds(const parallel::DeviceProgram& program) const;

  private:
    CostContext c_;
    double peak_flops_;
    double mxu_efficiency_;
    double attention_traffic_;  // multiplies the HBM time of ops on the S x S attention scores
    double hbm_bandwidth_;
    double slice_wait_ = 1.0;  // device work stretched by the wait for the slowest slice
};

}  // namespace podsim::cost
