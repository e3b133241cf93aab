#include "parallel/xla_gpu_split_k.hpp"

#include <algorithm>
#include <array>
#include <cmath>

namespace podsim::parallel {
namespace {

// The rewriter's constants, as XLA gives them for Hopper (compute capability 9.x: H100, H200), the
// only GPUs podsim has topologies for: the tile of its cost model, the candidate factors, and the
// weights of the dot's compute and memory costs, of the reduction's memory traffic and of its launch
// (dimensionless: the model compares candidates, its units cancel). Source:
// xla/backends/gpu/transforms/splitk_rewriter.cc (kMTileSize, kNTileSize, ChooseSplitK,
// GetCostWeights), openxla/xla 2026.
constexpr double kTile = 128.0;
constexpr std::array<std::int64_t, 12> kFactors = {1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048};
constexpr double kComputeCostWeight = 100.0;
constexpr double kMemoryCostWeight = 0.194136;
constexpr double kReductionMemoryCostWeight = 193.1384;
constexpr double kReductionLaunchOverhead = 4.36e7;
constexpr double kOperandBytes = 2.0;      // bf16 operands and output
constexpr double kAccumulatorBytes = 4.0;  // fp32 partials (GetGemmAccumulatorType)
constexpr double kFlopsPerElement = 2.0;   // default precision: one multiply and one add

// EstimateGemmCostAfterSplitK: the dot's cost is the larger of its compute (waves of output tiles
// over the multiprocessors) and its memory traffic; a split adds the reduction's traffic and launch.
double cost_after_split(double batch, double m, double n, double k, double factor, int cores) {
    const double effective_k = std::ceil(k / factor);
    const double effective_batch = batch * factor;
    const double m_tile = std::min(m, kTile), n_tile = std::min(n, kTile);
    const double tiles = effective_batch * std::ceil(m / kTile) * std::ceil(n / kTile);
    const double tiles_per_multiprocessor = (kTile * kTile) / (m_tile * n_tile);
    const double waves = std::max(1.0, tiles / (static_cast<double>(cores) * tiles_per_multiprocessor));
    const double compute = kFlopsPerElement * m_tile * n_tile * effective_k * waves * kComputeCostWeight;
    const double read_bytes = (m + n) * k * batch * kOperandBytes;
    const double write_bytes = m * n * effective_batch * (factor > 1.0 ? kAccumulatorBytes : kOperandBytes);
    const double dot = std::max(compute, (read_bytes + write_bytes) * kMemoryCostWeight);
    if (factor == 1.0) return dot;
    const double reduction_bytes =
        effective_batch * m * n * kAccumulatorBytes + batch * m * n * kOperandBytes;
    return dot + kReductionLaunchOverhead + reduction_bytes * kReductionMemoryCostWeight;
}

}  // namespace

SplitK xla_gpu_split_k(double batch, double m, double n, double k, int streaming_multiprocessors) {
    SplitK best;
    if (streaming_multiprocessors <= 0 || m <= 0.0 || n <= 0.0 || k <= 0.0) return best;
    double least = 0.0;
    for (const std::int64_t factor : kFactors) {
        const double cost =
            cost_after_split(batch, m, n, k, static_cast<double>(factor), streaming_multiprocessors);
        if (factor == 1 || cost < least) {  // the first of equal costs, as std::min_element
            least = cost;
            best.factor = factor;
        }
    }
    if (best.factor > 1)
        best.partial_bytes = static_cast<double>(best.factor) * batch * m * n * kAccumulatorBytes;
    return best;
}

}  // namespace podsim::parallel
