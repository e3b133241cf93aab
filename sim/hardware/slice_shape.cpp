#include "hardware/slice_shape.hpp"

#include <charconv>
#include <limits>

namespace podsim::hardware {

long SliceShape::chips() const {
    // Saturates instead of overflowing: four dimensions of up to 10^6 exceed any integer type, and
    // the caller's size limit then rejects the shape.
    long n = 1;
    for (int d : dims) {
        if (__builtin_mul_overflow(n, static_cast<long>(d), &n)) return std::numeric_limits<long>::max();
    }
    return n;
}

std::string SliceShape::to_string() const {
    std::string out;
    for (std::size_t i = 0; i < dims.size(); ++i) {
        if (i) out += 'x';
        out += std::to_string(dims[i]);
    }
    return out;
}

std::optional<SliceShape> parse_slice_shape(std::string_view text) {
    SliceShape shape;
    std::size_t pos = 0;
    while (pos <= text.size()) {
        std::size_t next = text.find('x', pos);
        std::string_view part =
            text.substr(pos, next == std::string_view::npos ? text.size() - pos : next - pos);
        int value = 0;
        auto [ptr, ec] = std::from_chars(part.data(), part.data() + part.size(), value);
        if (part.empty() || ec != std::errc() || ptr != part.data() + part.size() || value <= 0 ||
            value > 1'000'000) {
            return std::nullopt;
        }
        shape.dims.push_back(value);
        if (next == std::string_view::npos) break;
        pos = next + 1;
    }
    if (shape.dims.empty() || shape.dims.size() > 4) return std::nullopt;
    return shape;
}

}  // namespace podsim::hardware
