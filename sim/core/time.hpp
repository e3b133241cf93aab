#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

namespace podsim::core {

// Simulated time: integer picoseconds. Integers keep event order exact and runs bit-reproducible;
// int64 picoseconds cover about 106 days, far beyond any training step.
using Time = std::int64_t;

inline constexpr Time kPicosecond = 1;
inline constexpr Time kNanosecond = 1'000;
inline constexpr Time kMicrosecond = 1'000'000;
inline constexpr Time kMillisecond = 1'000'000'000;
inline constexpr Time kSecond = 1'000'000'000'000;

// The latest representable instant (about 106.75 days).
inline constexpr Time kMaxTime = std::numeric_limits<Time>::max();

// A duration or an instant beyond kMaxTime, or a duration that is not a number. Not a bug of podsim
// but of its input (a config whose step would last longer than int64 picoseconds reach); callers
// that know the input turn it into a core::UserError.
class TimeOverflow : public std::overflow_error {
  public:
    explicit TimeOverflow(const std::string& what) : std::overflow_error(what) {}
};

// Durations computed by the cost model are doubles in seconds; round up so that no op takes zero
// time. Throws TimeOverflow for NaN and for durations of kMaxTime or more (the cast would be
// undefined behaviour).
inline Time from_seconds(double seconds) {
    if (std::isnan(seconds)) throw TimeOverflow("a duration is not a number");
    if (!(seconds > 0.0)) return 0;
    const double picoseconds = std::ceil(seconds * static_cast<double>(kSecond));
    // 2^63 is exactly representable; every double below it converts without overflow.
    if (!(picoseconds < 9223372036854775808.0)) {
        throw TimeOverflow(fmt::format(
            "a duration of {:.4g} s exceeds the simulated-time limit (int64 picoseconds, about 106 days)",
            seconds));
    }
    return static_cast<Time>(picoseconds);
}

// a + b of instants and durations that are not negative; throws TimeOverflow past kMaxTime.
inline Time add_times(Time a, Time b) {
    Time sum = 0;
    if (__builtin_add_overflow(a, b, &sum))
        throw TimeOverflow("the simulated time passes the limit of int64 picoseconds (about 106 days)");
    return sum;
}

inline double to_seconds(Time t) {
    return static_cast<double>(t) / static_cast<double>(kSecond);
}

}  // namespace podsim::core
