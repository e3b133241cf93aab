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
    switch (dtype) {
        case DType::bf16:
            return "bf16";
        case DType::fp16:
            return "fp16";
        case DType::fp32:
            return "fp32";
        case DType::fp8:
            return "fp8";
        case DType::int8:
            return "int8";
    }
    return "?";
}

std::optional<DType> parse_dtype(std::string_view name) {
    for (DType d : {DType::bf16, DType::fp16, DType::fp32, DType::fp8, DType::int8}) {
        if (dtype_name(d) == name) return d;
    }
    if (name == "float32" || name == "f32") return DType::fp32;
    if (name == "bfloat16") return DType::bf16;
    if (name == "float16" || name == "f16") return DType::fp16;
    return std::nullopt;
}

std::vector<std::string> dtype_names() {
    return {"bf16", "fp16", "fp32", "fp8", "int8"};
}

}  // namespace podsim::core
