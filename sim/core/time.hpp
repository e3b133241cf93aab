#pragma once

#include <cmath>
#include <cstdint>

namespace podsim::core {

// Simulated time: integer picoseconds. Integers keep event order exact and runs bit-reproducible;
// int64 picoseconds cover about 106 days, far beyond any training step.
using Time = std::int64_t;

inline constexpr Time kPicosecond = 1;
inline constexpr Time kNanosecond = 1'000;
inline constexpr Time kMicrosecond = 1'000'000;
inline constexpr Time kMillisecond = 1'000'000'000;
inline constexpr Time kSecond = 1'000'000'000'000;

// Durations computed by the cost model are doubles in seconds; round up so that no op takes zero time.
inline Time from_seconds(double seconds) {
    if (!(seconds > 0.0)) return 0;
    return static_cast<Time>(std::ceil(seconds * static_cast<double>(kSecond)));
}

inline double to_seconds(Time t) {
    return static_cast<double>(t) / static_cast<double>(kSecond);
}

}  // namespace podsim::core
