#include "hlo/shape.hpp"

#include <fmt/format.h>

namespace podsim::hlo {

double Shape::elements() const {
    double n = 1.0;
    for (std::int64_t d : dims) n *= static_cast<double>(d);
    return n;
}

double Shape::bytes() const {
    if (is_tuple()) {
        double sum = 0.0;
        for (const Shape& s : tuple) sum += s.bytes();
        return sum;
    }
    if (!is_array()) return 0.0;
    // A tile covers the most minor dimensions (in layout order): each of them is padded up to a
    // multiple of the tile's extent (xla/layout.h, tiling: "the shape is padded to the tile").
    double elements_padded = 1.0;
    const std::size_t rank = dims.size();
    for (std::size_t i = 0; i < rank; ++i) {
        std::int64_t extent = dims[i];
        if (!tile.empty()) {
            // Position of dimension i counted from the most minor one.
            std::size_t minor_position = rank - 1 - i;
            if (!minor_to_major.empty()) {
                for (std::size_t p = 0; p < minor_to_major.size(); ++p) {
                    if (minor_to_major[p] == static_cast<std::int64_t>(i)) minor_position = p;
                }
            }
            if (minor_position < tile.size()) {
                const std::int64_t t = tile[tile.size() - 1 - minor_position];
                if (t > 0) extent = (extent + t - 1) / t * t;
            }
        }
        elements_padded *= static_cast<double>(extent);
    }
    const int bits = element_bits > 0 ? static_cast<int>(element_bits) : element_storage_bits(type);
    return elements_padded * bits / 8.0;
}

std::size_t Shape::leaf_count() const {
    if (!is_tuple()) return 1;
    std::size_t n = 0;
    for (const Shape& s : tuple) n += s.leaf_count();
    return n;
}

void Shape::leaves(std::vector<const Shape*>& out) const {
    if (!is_tuple()) {
        out.push_back(this);
        return;
    }
    for (const Shape& s : tuple) s.leaves(out);
}

std::size_t Shape::first_leaf_of_element(std::size_t index) const {
    std::size_t leaf = 0;
    for (std::size_t i = 0; i < index && i < tuple.size(); ++i) leaf += tuple[i].leaf_count();
    return leaf;
}

std::string to_string(const Shape& shape) {
    if (shape.is_tuple()) {
        std::string out = "(";
        for (std::size_t i = 0; i < shape.tuple.size(); ++i) {
            if (i) out += ", ";
            out += to_string(shape.tuple[i]);
        }
        return out + ")";
    }
    return fmt::format("{}[{}]", element_type_name(shape.type), fmt::join(shape.dims, ","));
}

}  // namespace podsim::hlo
