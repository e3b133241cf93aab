#include "core/key.hpp"

#include <cmath>

#include <fmt/format.h>

namespace podsim::core {
namespace {

std::string_view base_unit(Dimension dimension) {
    switch (dimension) {
        case Dimension::bytes:
            return "B";
        case Dimension::time:
            return "s";
        case Dimension::bandwidth:
            return "B/s";
        case Dimension::flop_rate:
            return "FLOP/s";
        case Dimension::frequency:
            return "Hz";
    }
    return "";
}

std::string format_value(const Key& key, double value) {
    if (key.kind == KeyKind::quantity) return fmt::format("{:g} {}", value, base_unit(key.dimension));
    // Whole numbers beyond long long's range (a bound of 1e300) are written as doubles.
    if ((key.kind == KeyKind::integer || key.kind == KeyKind::shape) && std::abs(value) < 9.2e18)
        return fmt::format("{}", static_cast<long long>(value));
    if (key.kind == KeyKind::integer || key.kind == KeyKind::shape) return fmt::format("{:.0f}", value);
    return fmt::format("{:g}", value);
}

}  // namespace

std::string Key::type_text() const {
    if (!type.empty()) return std::string(type);
    switch (kind) {
        case KeyKind::text:
            return "string";
        case KeyKind::integer:
            return unit.empty() ? "int" : fmt::format("int ({})", unit);
        case KeyKind::number:
            return unit.empty() ? "number" : fmt::format("number ({})", unit);
        case KeyKind::boolean:
            return "bool";
        case KeyKind::quantity:
            return std::string(dimension_name(dimension));
        case KeyKind::choice: {
            std::string out = "enum ";
            for (std::size_t i = 0; i < choices.size(); ++i) out += (i ? "|" : "") + std::string(choices[i]);
            return out;
        }
        case KeyKind::shape:
            return "shape";
        case KeyKind::mapping:
            return "mapping";
        case KeyKind::list:
            return "list";
    }
    return "";
}

std::string Key::default_text() const {
    if (!default_note.empty()) return std::string(default_note);
    if (required) return "(required)";
    switch (kind) {
        case KeyKind::boolean:
            return boolean_default() ? "true" : "false";
        case KeyKind::choice:
            return std::string(default_string);
        case KeyKind::mapping:
            return "{}";
        case KeyKind::text:
            return std::string(default_string);
        case KeyKind::list:
            return "";
        default:
            return format_value(*this, default_value);
    }
}

std::string Key::bounds_text() const {
    if (!bounded()) return "";
    if (positive && maximum != std::numeric_limits<double>::infinity())
        return fmt::format("(0, {}]", format_value(*this, maximum));
    if (positive) return "> 0";
    const bool low = minimum != -std::numeric_limits<double>::infinity();
    const bool high = maximum != std::numeric_limits<double>::infinity();
    if (low && high)
        return fmt::format("[{}, {}]", format_value(*this, minimum), format_value(*this, maximum));
    if (low) return fmt::format(">= {}", format_value(*this, minimum));
    return fmt::format("<= {}", format_value(*this, maximum));
}

std::string Key::bounds_error(double value) const {
    return bounds_error(value, format_value(*this, value));
}

std::string Key::bounds_error(long long value) const {
    return bounds_error(static_cast<double>(value), std::to_string(value));
}

std::string Key::bounds_error(double value, const std::string& found) const {
    const std::string what = kind == KeyKind::shape ? " chips" : "";
    if (positive && value <= 0) return "must be positive";
    if (value < minimum) {
        if (minimum == 1 && kind == KeyKind::integer) return fmt::format("must be positive, found {}", found);
        return fmt::format("must be at least {}{}, found {}", format_value(*this, minimum), what, found);
    }
    if (value > maximum) {
        std::string message =
            fmt::format("must be at most {}{}, found {}", format_value(*this, maximum), what, found);
        if (!source.empty()) message += fmt::format(" ({})", source);
        return message;
    }
    return "";
}

}  // namespace podsim::core
