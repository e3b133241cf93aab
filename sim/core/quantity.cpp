#include "core/quantity.hpp"

#include <array>
#include <charconv>
#include <cmath>

#include <fmt/format.h>

namespace podsim::core {
namespace {

struct UnitDef {
    std::string_view symbol;
    Dimension dimension;
    double scale;  // to the SI base unit
};

// Decimal prefixes for SI units and binary prefixes for *iB, as the Cloud TPU docs use them.
constexpr std::array kUnits = {
    UnitDef{"B", Dimension::bytes, 1.0},
    UnitDef{"bytes", Dimension::bytes, 1.0},
    UnitDef{"kB", Dimension::bytes, 1e3},
    UnitDef{"KB", Dimension::bytes, 1e3},
    UnitDef{"MB", Dimension::bytes, 1e6},
    UnitDef{"GB", Dimension::bytes, 1e9},
    UnitDef{"TB", Dimension::bytes, 1e12},
    UnitDef{"PB", Dimension::bytes, 1e15},
    UnitDef{"KiB", Dimension::bytes, 1024.0},
    UnitDef{"MiB", Dimension::bytes, 1024.0 * 1024.0},
    UnitDef{"GiB", Dimension::bytes, 1024.0 * 1024.0 * 1024.0},
    UnitDef{"TiB", Dimension::bytes, 1024.0 * 1024.0 * 1024.0 * 1024.0},
    UnitDef{"ps", Dimension::time, 1e-12},
    UnitDef{"ns", Dimension::time, 1e-9},
    UnitDef{"us", Dimension::time, 1e-6},
    UnitDef{"\xC2\xB5s", Dimension::time, 1e-6},  // µs
    UnitDef{"ms", Dimension::time, 1e-3},
    UnitDef{"s", Dimension::time, 1.0},
    UnitDef{"min", Dimension::time, 60.0},
    UnitDef{"B/s", Dimension::bandwidth, 1.0},
    UnitDef{"kB/s", Dimension::bandwidth, 1e3},
    UnitDef{"KB/s", Dimension::bandwidth, 1e3},
    UnitDef{"MB/s", Dimension::bandwidth, 1e6},
    UnitDef{"GB/s", Dimension::bandwidth, 1e9},
    UnitDef{"TB/s", Dimension::bandwidth, 1e12},
    UnitDef{"PB/s", Dimension::bandwidth, 1e15},
    UnitDef{"KiB/s", Dimension::bandwidth, 1024.0},
    UnitDef{"MiB/s", Dimension::bandwidth, 1024.0 * 1024.0},
    UnitDef{"GiB/s", Dimension::bandwidth, 1024.0 * 1024.0 * 1024.0},
    UnitDef{"Gb/s", Dimension::bandwidth, 1e9 / 8.0},
    UnitDef{"Gbit/s", Dimension::bandwidth, 1e9 / 8.0},
    UnitDef{"Tb/s", Dimension::bandwidth, 1e12 / 8.0},
    UnitDef{"FLOP/s", Dimension::flop_rate, 1.0},
    UnitDef{"GFLOP/s", Dimension::flop_rate, 1e9},
    UnitDef{"TFLOP/s", Dimension::flop_rate, 1e12},
    UnitDef{"PFLOP/s", Dimension::flop_rate, 1e15},
    UnitDef{"TFLOPS", Dimension::flop_rate, 1e12},
    UnitDef{"Hz", Dimension::frequency, 1.0},
    UnitDef{"MHz", Dimension::frequency, 1e6},
    UnitDef{"GHz", Dimension::frequency, 1e9},
};

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

}  // namespace

std::string_view dimension_name(Dimension dimension) {
    switch (dimension) {
        case Dimension::bytes:
            return "size";
        case Dimension::time:
            return "time";
        case Dimension::bandwidth:
            return "bandwidth";
        case Dimension::flop_rate:
            return "compute rate";
        case Dimension::frequency:
            return "frequency";
    }
    return "quantity";
}

std::string_view dimension_example(Dimension dimension) {
    switch (dimension) {
        case Dimension::bytes:
            return "32 GiB";
        case Dimension::time:
            return "1 us";
        case Dimension::bandwidth:
            return "45 GB/s";
        case Dimension::flop_rate:
            return "275 TFLOP/s";
        case Dimension::frequency:
            return "1050 MHz";
    }
    return "";
}

namespace {

const char* dimension_base_unit(Dimension d) {
    switch (d) {
        case Dimension::bytes:
            return "bytes";
        case Dimension::time:
            return "seconds";
        case Dimension::bandwidth:
            return "bytes per second";
        case Dimension::flop_rate:
            return "FLOP/s";
        case Dimension::frequency:
            return "Hz";
    }
    return "base units";
}

}  // namespace

QuantityParse parse_quantity(std::string_view text, Dimension expected) {
    QuantityParse result;
    std::string_view s = trim(text);
    if (s.empty()) {
        result.error = fmt::format("empty value: expected a {} such as '{}'", dimension_name(expected),
                                   dimension_example(expected));
        return result;
    }
    double number = 0.0;
    const char* begin = s.data();
    const char* end = s.data() + s.size();
    auto [ptr, ec] = std::from_chars(begin, end, number);
    if (ec != std::errc() || ptr == begin) {
        result.error = fmt::format("'{}' is not a {}: write a number and a unit, such as '{}'", s,
                                   dimension_name(expected), dimension_example(expected));
        return result;
    }
    if (!std::isfinite(number)) {
        result.error = fmt::format("'{}' is not a finite number", s);
        return result;
    }
    std::string_view unit = trim(std::string_view(ptr, static_cast<std::size_t>(end - ptr)));
    if (unit.empty()) {
        result.error =
            fmt::format("'{}' has no unit: write it with one, such as '{}'", s, dimension_example(expected));
        return result;
    }
    for (const auto& def : kUnits) {
        if (def.symbol != unit) continue;
        if (def.dimension != expected) {
            result.error = fmt::format("'{}' is a {}, but a {} is expected (such as '{}')", s,
                                       dimension_name(def.dimension), dimension_name(expected),
                                       dimension_example(expected));
            return result;
        }
        // 1e300 TB/s is a finite number but not a finite bandwidth in B/s.
        if (!std::isfinite(number * def.scale)) {
            result.error = fmt::format("'{}' is out of range: it is not a finite number once converted to {}",
                                       s, dimension_base_unit(expected));
            return result;
        }
        result.ok = true;
        result.value = number * def.scale;
        return result;
    }
    result.error = fmt::format("unknown unit '{}' in '{}': a {} is written like '{}'", unit, s,
                               dimension_name(expected), dimension_example(expected));
    return result;
}

std::string format_bytes(double bytes) {
    const double kib = 1024.0;
    double a = std::fabs(bytes);
    if (a >= kib * kib * kib) return fmt::format("{:.2f} GiB", bytes / (kib * kib * kib));
    if (a >= kib * kib) return fmt::format("{:.2f} MiB", bytes / (kib * kib));
    if (a >= kib) return fmt::format("{:.2f} KiB", bytes / kib);
    return fmt::format("{:.0f} B", bytes);
}

std::string format_seconds(double seconds) {
    double a = std::fabs(seconds);
    if (a >= 1.0) return fmt::format("{:.3f} s", seconds);
    if (a >= 1e-3) return fmt::format("{:.3f} ms", seconds * 1e3);
    if (a >= 1e-6) return fmt::format("{:.3f} us", seconds * 1e6);
    return fmt::format("{:.0f} ns", seconds * 1e9);
}

std::string format_bandwidth(double bytes_per_second) {
    double a = std::fabs(bytes_per_second);
    if (a >= 1e12) return fmt::format("{:.2f} TB/s", bytes_per_second / 1e12);
    if (a >= 1e9) return fmt::format("{:.2f} GB/s", bytes_per_second / 1e9);
    if (a >= 1e6) return fmt::format("{:.2f} MB/s", bytes_per_second / 1e6);
    return fmt::format("{:.0f} B/s", bytes_per_second);
}

}  // namespace podsim::core
