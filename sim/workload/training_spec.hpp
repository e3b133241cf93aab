#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/dtype.hpp"

namespace podsim::workload {

enum class Optimizer { adam, adamw, adafactor, sgd };
enum class Remat { none, full, save_dots, attention };

struct TrainingSpec {
    std::int64_t global_batch = 0;  // sequences (images) per optimizer step
    int seq_len = 0;                // text models
    int microbatches = 1;           // gradient accumulation steps
    core::DType dtype = core::DType::bf16;
    core::DType param_dtype = core::DType::fp32;
    Optimizer optimizer = Optimizer::adam;
    Remat remat = Remat::none;
    // fp32 master copy of bf16 parameters kept by the optimizer (mixed precision), if any.
    std::optional<core::DType> master_dtype;
    // Megatron sequence parallelism: activations between the tensor-parallel regions are split
    // along the sequence over the tensor axis; all-gather before and reduce-scatter after them
    // replace the all-reduce.
    bool tensor_sequence = false;
};

std::string_view optimizer_name(Optimizer optimizer);
std::string_view remat_name(Remat remat);

}  // namespace podsim::workload
