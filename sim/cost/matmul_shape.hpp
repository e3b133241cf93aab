#pragma once

#include <string_view>

namespace podsim::cost {

// Matmuls grouped by their narrowest dimension, in MXU tiles. A systolic array reaches its steady
// state only when every dimension spans several tiles; thin matmuls (attention with a 128-wide head,
// a 384-wide ViT, small-batch decoding) spend more of their time filling and draining it. Each class
// has its own efficiency factor in the calibration (docs/model.md, "Matmul shape classes").
enum class MatmulShapeClass { small, medium, large };

// Bounds in MXU tiles (128 on TPU v2-v5, 256 on v6e): small below 2 tiles, large from 8 tiles.
// podsim's convention (docs/model.md): the projections of the published cases are large, their
// attention matmuls (head_dim 128-256) small or medium.
inline constexpr double kSmallShapeBelowTiles = 2.0;
inline constexpr double kLargeShapeFromTiles = 8.0;

// m, n, k are the per-chip matmul dimensions before padding.
MatmulShapeClass matmul_shape_class(double m, double n, double k, int mxu_tile);
MatmulShapeClass matmul_shape_class(double narrowest_dimension, int mxu_tile);
std::string_view shape_class_name(MatmulShapeClass shape_class);

}  // namespace podsim::cost
