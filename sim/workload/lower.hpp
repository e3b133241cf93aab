#pragma once

#include "workload/model_spec.hpp"
#include "workload/op_graph.hpp"
#include "workload/training_spec.hpp"

namespace podsim::workload {

// Lowers one training step into fused ops: the forward, recompute and backward of one microbatch
// (unsharded, its batch extents per sample: the partitioner scales them by global_batch /
// microbatches), then one optimizer update per parameter group.
// FLOPs follow Matmul FLOPs = 2·M·N·K; the backward of a matmul is a data-gradient and a
// weight-gradient matmul of the same size (so backward = 2x forward). Attention is computed in
// full S x S (XLA evaluates the masked half too). Elementwise work is fused into neighbouring
// matmuls where XLA does so on TPU (bias, activation, residual add) and into loop/reduction fusions
// otherwise (norms, softmax, embedding, loss).
OpGraph lower_training_step(const ModelSpec& model, const TrainingSpec& training);

// Everything lower_training_step depends on, as a string: two specs with the same key lower to the
// same graph (the mesh, topology, runtime and batch play no part), so a sweep can share one lowering.
std::string lowering_key(const ModelSpec& model, const TrainingSpec& training);

// Bytes of optimizer state per parameter group, in the parameter dtype.
double optimizer_state_bytes(const ParamGroup& group, Optimizer optimizer, core::DType param_dtype);

}  // namespace podsim::workload
