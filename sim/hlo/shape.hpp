#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hlo/element_type.hpp"

namespace podsim::hlo {

// An HLO shape: an array (element type, dimensions, layout) or a tuple of shapes.
struct Shape {
    ElementType type = ElementType::invalid;
    std::vector<std::int64_t> dims;
    std::vector<Shape> tuple;  // tuple shapes only
    // Layout: minor_to_major (empty: row-major), the first tile's dimensions (TPU layouts such as
    // {1,0:T(8,128)(2,1)}; empty when untiled), packed element bits (E(n); 0 = the type's own) and
    // memory space (S(n): 0 device memory; on TPU 1 is VMEM and 5 pinned host memory).
    std::vector<std::int64_t> minor_to_major;
    std::vector<std::int64_t> tile;
    std::int64_t element_bits = 0;
    std::int64_t memory_space = 0;

    bool is_tuple() const { return type == ElementType::tuple; }
    bool is_array() const {
        return type != ElementType::tuple && type != ElementType::token && type != ElementType::opaque &&
               type != ElementType::invalid;
    }
    double elements() const;  // a double: dimensions of hostile modules overflow 64 bits
    // Bytes the array occupies, its minor dimensions padded to the tile; a tuple's leaves summed.
    double bytes() const;
    // Leaves in order (a non-tuple shape is its own only leaf).
    std::size_t leaf_count() const;
    void leaves(std::vector<const Shape*>& out) const;
    // The leaf at a flat leaf index's position: for tuple element `index` of a tuple shape, the
    // first leaf of that element.
    std::size_t first_leaf_of_element(std::size_t index) const;
};

std::string to_string(const Shape& shape);

}  // namespace podsim::hlo
