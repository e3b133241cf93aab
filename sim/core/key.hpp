#pragma once

#include <limits>
#include <span>
#include <string>
#include <string_view>

#include "core/quantity.hpp"

namespace podsim::core {

enum class KeyKind {
    text,      // a string
    integer,   // a whole number, read as 64-bit and checked against [minimum, maximum]
    number,    // a plain real number
    boolean,   // true or false
    quantity,  // a number with a unit of `dimension` ("45 GB/s"), held in SI base units
    choice,    // one of `choices`
    shape,     // a slice shape such as 4x4x8; minimum and maximum bound its chips
    mapping,   // a block of keys (or a free mapping, see `type`)
    list,      // a sequence
};

// One key of an input schema, declared once: the loader reads it (required or default, bounds),
// `podsim explain` prints it, and the spec structs take their default member values from it.
// Declared as constexpr tables (e.g. hardware/topology_keys.hpp), one line per key, with
// designated initializers in the order of the members below.
struct Key {
    std::string_view path{};  // dotted, e.g. "training.global_batch"; "<axis>" marks a free name
    KeyKind kind = KeyKind::text;
    std::string_view unit{};                 // integers and numbers: what they count (layers, tokens, chips)
    Dimension dimension = Dimension::bytes;  // quantities only
    std::span<const std::string_view> choices{};  // choices only: the enum's name table, in enum order
    bool required = false;
    // The default when the key is absent, for keys that have a constant one. Numbers and quantities
    // in SI base units; booleans 0 or 1; choices (by name) and strings in default_string.
    double default_value = 0.0;
    std::string_view default_string{};
    // Instead of a constant default: what an absent key means ("d_model / heads", "unset").
    std::string_view default_note{};
    double minimum = -std::numeric_limits<double>::infinity();  // inclusive bounds
    double maximum = std::numeric_limits<double>::infinity();
    bool positive = false;  // strictly above zero (sizes and rates)
    std::string_view help{};
    std::string_view source{};  // where the default and the bounds come from, when not obvious
    std::string_view type{};    // shown instead of the kind when set ("name | path | mapping")

    constexpr bool has_default() const {
        return !required && default_note.empty() && kind != KeyKind::mapping;
    }
    constexpr bool bounded() const {
        return positive || minimum != -std::numeric_limits<double>::infinity() ||
               maximum != std::numeric_limits<double>::infinity();
    }
    constexpr long long integer_default() const { return static_cast<long long>(default_value); }
    constexpr bool boolean_default() const { return default_value != 0.0; }
    constexpr std::size_t choice_default_index() const {
        for (std::size_t i = 0; i < choices.size(); ++i)
            if (choices[i] == default_string) return i;
        throw "the default is not one of the key's choices";  // compile-time error in constexpr use
    }
    template <class Enum>
    constexpr Enum choice_default() const {
        return static_cast<Enum>(choice_default_index());
    }
    // The last component of the path: the name the key has in its mapping.
    constexpr std::string_view name() const {
        auto dot = path.rfind('.');
        return dot == std::string_view::npos ? path : path.substr(dot + 1);
    }

    std::string type_text() const;
    // The default as a config would write it ("128", "0 s", "whole_cubes_of_4"), or the note.
    std::string default_text() const;
    std::string bounds_text() const;  // "[1, 1024]" or "" when unbounded
    // Why `value` is outside the bounds, or "" when it is inside.
    std::string bounds_error(double value) const;
    // The same for an integer as it was written (past 2^53 a double would misquote it).
    std::string bounds_error(long long value) const;

  private:
    std::string bounds_error(double value, const std::string& found) const;
};

// The key of `keys` at `path`; a compile-time error when there is none.
consteval const Key& find_key(std::span<const Key> keys, std::string_view path) {
    for (const Key& key : keys)
        if (key.path == path) return key;
    throw "no such key";
}

}  // namespace podsim::core
