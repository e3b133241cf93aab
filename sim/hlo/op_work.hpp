#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "hlo/module.hpp"

namespace podsim::hlo {

// What one instruction asks of a chip when it runs as one kernel: the FLOPs of the matmuls,
// convolutions and attention it computes, the HBM bytes it reads and writes, and the shape of its
// largest matmul (the cost model pads it to the MXU).
struct OpWork {
    double flops = 0.0;
    double bytes = 0.0;
    double mm_batch = 1.0, mm_m = 0.0, mm_n = 0.0, mm_k = 0.0;
    // A custom call whose target podsim does not know: priced from its operands and results only.
    bool bytes_only = false;
    // Output leaves that share a buffer with an operand (in place): output leaf -> operand number.
    std::vector<std::pair<std::size_t, std::size_t>> in_place;
};

// A custom call that only annotates (sharding, layout, host placement before the compiler moved
// it): no kernel, its result is its operand.
bool is_annotation_call(const Instruction& inst);

// Prices instructions of one module, keeping what it learns about fused computations.
//  - dot: 2 x batch x m x n x k (XLA's HloCostAnalysis counts the same).
//  - convolution: 2 x output elements x kernel elements / kernel output features (each output
//    element is a dot over the kernel window and its input features).
//  - fusion: the dots and convolutions inside; bytes are each operand as the fusion reads it (a
//    dynamic-slice or slice of an operand reads the slice, an operand updated in place by a
//    dynamic-update-slice is not read) plus what it writes (an in-place update writes the update).
//  - custom calls: cuBLAS GEMMs from their dot dimensions, cuDNN and Transformer Engine fused
//    attention from their backend configs (2·b·h·s_q·s_kv·(d_qk + d_v) forward, with the backward's
//    five matmuls 2·b·h·s_q·s_kv·(3 d_qk + 2 d_v), halved under a causal mask), Pallas kernels from
//    the cost_estimate they declare; any other target from its operand and result bytes.
//  - everything else: operands read and result written once.
class WorkModel {
  public:
    explicit WorkModel(const Module& module);
    OpWork work(const Computation& computation, const Instruction& inst);
    // Custom-call targets priced from bytes only, with how often each was seen.
    const std::map<std::string, int>& unknown_targets() const { return unknown_targets_; }

  private:
    struct FusionInfo {
        double flops = 0.0;
        double mm_batch = 1.0, mm_m = 0.0, mm_n = 0.0, mm_k = 0.0;
        std::vector<double> read_bytes;  // by parameter number: bytes of the operand the fusion reads
        double written_bytes = 0.0;
        std::vector<std::pair<std::size_t, std::size_t>> in_place;
    };
    const FusionInfo& fusion(int computation);
    OpWork custom_call(const Computation& computation, const Instruction& inst);

    const Module& module_;
    std::map<int, FusionInfo> fusions_;
    std::map<std::string, int> unknown_targets_;
};

}  // namespace podsim::hlo
