#pragma once

#include <cstdint>

namespace podsim::parallel {

// XLA:GPU's split-K rewrite of a dot (openxla/xla, xla/backends/gpu/transforms/splitk_rewriter.cc):
// a dot whose M x N output has too few 128 x 128 tiles to fill the device's streaming
// multiprocessors is computed as `factor` partial products over slices of its contraction, written
// in the fp32 accumulator type as f32[factor, batch, M, N], which a reduction fusion sums. The
// factor is the candidate (1, 2, 4, ..., 2048) whose estimated cost is least, by a fixed cost model
// of the dot before and after the split; no autotuning picks it.
struct SplitK {
    std::int64_t factor = 1;
    double partial_bytes = 0.0;  // the fp32 partial sums, 0 when the dot is not split
};

// The split of one dot C[batch, m, n] = A[batch, m, k] . B[batch, k, n] with bf16 operands and
// output, on a device with `streaming_multiprocessors`, and the bytes of its partials.
SplitK xla_gpu_split_k(double batch, double m, double n, double k, int streaming_multiprocessors);

}  // namespace podsim::parallel
