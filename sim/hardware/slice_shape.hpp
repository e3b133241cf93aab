#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace podsim::hardware {

// Physical shape of one slice in chips, e.g. 4x4x8; dimension 0 is x.
struct SliceShape {
    std::vector<int> dims;

    long chips() const;  // saturates at the largest long
    std::string to_string() const;
    bool operator==(const SliceShape&) const = default;
};

// Parses "4x4x8" (or "2x2"); nullopt on anything else, including zero or negative sizes.
std::optional<SliceShape> parse_slice_shape(std::string_view text);

}  // namespace podsim::hardware
