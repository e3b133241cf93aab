#pragma once

#include <cstdint>
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
};

std::string_view optimizer_name(Optimizer optimizer);
std::string_view remat_name(Remat remat);

}  // namespace podsim::workload
