#include "cost/matmul_shape.hpp"

#include <algorithm>

namespace podsim::cost {

MatmulShapeClass matmul_shape_class(double narrowest_dimension, int mxu_tile) {
    const double tiles = narrowest_dimension / static_cast<double>(std::max(1, mxu_tile));
    if (tiles < kSmallShapeBelowTiles) return MatmulShapeClass::small;
    if (tiles < kLargeShapeFromTiles) return MatmulShapeClass::medium;
    return MatmulShapeClass::large;
}

MatmulShapeClass matmul_shape_class(double m, double n, double k, int mxu_tile) {
    return matmul_shape_class(std::min({m, n, k}), mxu_tile);
}

std::string_view shape_class_name(MatmulShapeClass shape_class) {
    switch (shape_class) {
        case MatmulShapeClass::small:
            return "small";
        case MatmulShapeClass::medium:
            return "medium";
        case MatmulShapeClass::large:
            return "large";
    }
    return "large";
}

}  // namespace podsim::cost
