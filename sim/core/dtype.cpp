#include "core/dtype.hpp"

namespace podsim::core {

std::size_t dtype_bytes(DType dtype) {
    switch (dtype) {
        case DType::bf16:
        case DType::fp16:
            return 2;
        case DType::fp32:
            return 4;
        case DType::fp8:
        case DType::int8:
            return 1;
    }
    return 4;
}

std::string_view dtype_name(DType dtype) {
    return kDTypeNames[static_cast<std::size_t>(dtype)];
}

std::optional<DType> parse_dtype(std::string_view name) {
    for (std::size_t i = 0; i < kDTypeNames.size(); ++i) {
        if (kDTypeNames[i] == name) return static_cast<DType>(i);
    }
    if (name == "float32" || name == "f32") return DType::fp32;
    if (name == "bfloat16") return DType::bf16;
    if (name == "float16" || name == "f16") return DType::fp16;
    return std::nullopt;
}

std::vector<std::string> dtype_names() {
    return {kDTypeNames.begin(), kDTypeNames.end()};
}

}  // namespace podsim::core
