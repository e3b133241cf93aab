#pragma once

#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace podsim::core {

enum class DType { bf16, fp16, fp32, fp8, int8 };
// In the order of DType; the names configs write.
inline constexpr std::array<std::string_view, 5> kDTypeNames = {"bf16", "fp16", "fp32", "fp8", "int8"};

std::size_t dtype_bytes(DType dtype);
std::string_view dtype_name(DType dtype);
std::optional<DType> parse_dtype(std::string_view name);
std::vector<std::string> dtype_names();

}  // namespace podsim::core
