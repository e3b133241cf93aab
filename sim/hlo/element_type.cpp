#include "hlo/element_type.hpp"

#include <array>
#include <utility>

namespace podsim::hlo {
namespace {

struct TypeInfo {
    ElementType type;
    std::string_view name;
    int proto_number;
    int bits;
};

// xla/xla_data.proto, PrimitiveType.
constexpr std::array<TypeInfo, 34> kTypes = {{
    {ElementType::invalid, "invalid", 0, 0},
    {ElementType::pred, "pred", 1, 8},
    {ElementType::s1, "s1", 30, 8},
    {ElementType::s2, "s2", 26, 8},
    {ElementType::s4, "s4", 21, 8},
    {ElementType::s8, "s8", 2, 8},
    {ElementType::s16, "s16", 3, 16},
    {ElementType::s32, "s32", 4, 32},
    {ElementType::s64, "s64", 5, 64},
    {ElementType::u1, "u1", 31, 8},
    {ElementType::u2, "u2", 27, 8},
    {ElementType::u4, "u4", 22, 8},
    {ElementType::u8, "u8", 6, 8},
    {ElementType::u16, "u16", 7, 16},
    {ElementType::u32, "u32", 8, 32},
    {ElementType::u64, "u64", 9, 64},
    {ElementType::f16, "f16", 10, 16},
    {ElementType::bf16, "bf16", 16, 16},
    {ElementType::f32, "f32", 11, 32},
    {ElementType::f64, "f64", 12, 64},
    {ElementType::f8e5m2, "f8e5m2", 19, 8},
    {ElementType::f8e4m3, "f8e4m3", 28, 8},
    {ElementType::f8e4m3fn, "f8e4m3fn", 20, 8},
    {ElementType::f8e4m3b11fnuz, "f8e4m3b11fnuz", 23, 8},
    {ElementType::f8e3m4, "f8e3m4", 29, 8},
    {ElementType::f8e5m2fnuz, "f8e5m2fnuz", 24, 8},
    {ElementType::f8e4m3fnuz, "f8e4m3fnuz", 25, 8},
    {ElementType::f4e2m1fn, "f4e2m1fn", 32, 8},
    {ElementType::f8e8m0fnu, "f8e8m0fnu", 33, 8},
    {ElementType::c64, "c64", 15, 64},
    {ElementType::c128, "c128", 18, 128},
    {ElementType::tuple, "tuple", 13, 0},
    {ElementType::opaque, "opaque", 14, 0},
    {ElementType::token, "token", 17, 0},
}};

constexpr bool in_enum_order() {
    for (std::size_t i = 0; i < kTypes.size(); ++i) {
        if (static_cast<std::size_t>(kTypes[i].type) != i) return false;
    }
    return true;
}
static_assert(in_enum_order(), "kTypes must list ElementType in its order");

const TypeInfo& info(ElementType type) {
    return kTypes[static_cast<std::size_t>(type)];
}

}  // namespace

std::string_view element_type_name(ElementType type) {
    return info(type).name;
}

std::optional<ElementType> parse_element_type(std::string_view name) {
    for (const auto& t : kTypes) {
        if (t.name == name && t.type != ElementType::invalid && t.type != ElementType::tuple) return t.type;
    }
    return std::nullopt;
}

std::optional<ElementType> element_type_from_proto(std::int64_t number) {
    for (const auto& t : kTypes) {
        if (t.proto_number == number && t.type != ElementType::invalid) return t.type;
    }
    return std::nullopt;
}

int element_storage_bits(ElementType type) {
    return info(type).bits;
}

bool is_floating(ElementType type) {
    return type >= ElementType::f16 && type <= ElementType::c128;
}

}  // namespace podsim::hlo
