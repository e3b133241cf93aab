#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace podsim::hlo {

// XLA's primitive types (xla/xla_data.proto PrimitiveType), as HLO text names them.
enum class ElementType : std::uint8_t {
    invalid,
    pred,
    s1,
    s2,
    s4,
    s8,
    s16,
    s32,
    s64,
    u1,
    u2,
    u4,
    u8,
    u16,
    u32,
    u64,
    f16,
    bf16,
    f32,
    f64,
    f8e5m2,
    f8e4m3,
    f8e4m3fn,
    f8e4m3b11fnuz,
    f8e3m4,
    f8e5m2fnuz,
    f8e4m3fnuz,
    f4e2m1fn,
    f8e8m0fnu,
    c64,
    c128,
    tuple,
    opaque,
    token,
};

std::string_view element_type_name(ElementType type);
std::optional<ElementType> parse_element_type(std::string_view name);
// The PrimitiveType number of xla_data.proto, or nullopt for numbers podsim does not know.
std::optional<ElementType> element_type_from_proto(std::int64_t number);
// Bits one element occupies in memory unless its layout packs it (E(n)): sub-byte types and pred
// take a byte each, as XLA's ShapeUtil::ByteSizeOfPrimitiveType has it.
int element_storage_bits(ElementType type);
bool is_floating(ElementType type);

}  // namespace podsim::hlo
