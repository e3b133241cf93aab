#pragma once

#include <string>
#include <string_view>

namespace podsim::core {

// What a quantity measures. Values are held in SI base units: bytes, seconds, bytes/s, FLOP/s, Hz.
enum class Dimension { bytes, time, bandwidth, flop_rate, frequency };

std::string_view dimension_name(Dimension dimension);
// An example written the way configs write it, for error messages and `podsim explain`.
std::string_view dimension_example(Dimension dimension);

struct QuantityParse {
    bool ok = false;
    double value = 0.0;  // in the SI base unit of the expected dimension
    std::string error;   // why it did not parse, when !ok
};

// Parses "275 TFLOP/s", "32 GiB", "1.2 TB/s", "1 us". A bare number is an error: units are required.
QuantityParse parse_quantity(std::string_view text, Dimension expected);

// Human-readable forms used in reports.
std::string format_bytes(double bytes);
std::string format_seconds(double seconds);
std::string format_bandwidth(double bytes_per_second);

}  // namespace podsim::core
