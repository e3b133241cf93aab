#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/dtype.hpp"
#include "workload/training_keys.hpp"

namespace podsim::workload {

enum class Optimizer { adam, adamw, adafactor, sgd };
enum class Remat { none, full, save_dots, attention };
static_assert(kOptimizerNames.size() == static_cast<std::size_t>(Optimizer::sgd) + 1);
static_assert(kRematNames.size() == static_cast<std::size_t>(Remat::attention) + 1);

// Defaults: training_keys.hpp.

struct TrainingSpec {
    std::int64_t global_batch = 0;  // sequences (images) per optimizer step
    int seq_len = 0;                // text models
    int microbatches = static_cast<int>(training_key("training.microbatches").integer_default());
    core::DType dtype = training_key("training.dtype").choice_default<core::DType>();
    core::DType param_dtype = training_key("training.param_dtype").choice_default<core::DType>();
    Optimizer optimizer = training_key("training.optimizer").choice_default<Optimizer>();
    Remat remat = training_key("training.remat").choice_default<Remat>();
    // fp32 master copy of bf16 parameters kept by the optimizer (mixed precision), if any.
    std::optional<core::DType> master_dtype;
    // Megatron sequence parallelism: activations between the tensor-parallel regions are split
    // along the sequence over the tensor axis; all-gather before and reduce-scatter after them
    // replace the all-reduce.
    bool tensor_sequence = training_key("training.tensor_sequence").boolean_default();

    bool operator==(const TrainingSpec&) const = default;
};

std::string_view optimizer_name(Optimizer optimizer);
std::string_view remat_name(Remat remat);

}  // namespace podsim::workload
