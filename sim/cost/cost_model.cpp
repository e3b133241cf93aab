#include "cost/cost_model.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <numbers>

#include "collectives/closed_form.hpp"
#include "core/assert.hpp"

namespace podsim::cost {
namespace {

constexpr double kSublaneRows = 8.0;  // TPU vector registers are 8 x 128 (scaling-book tpus chapter)

double round_up(double value, double multiple) {
    if (value <= 0.0) return 0.0;
    return std::ceil(value / multiple) * multiple;
}

}  // namespace

CostModel::CostModel(CostContext context) : c_(context) {
    // Per device: on v2/v3 each TensorCore is a device with half the chip's peak and HBM bandwidth.
    peak_flops_ = c_.topology.chip.device_peak_flops_for(c_.compute_dtype);
    mxu_efficiency_ = c_.calibration.mxu_efficiency;
    attention_traffic_ = c_.calibration.attention_traffic(c_.runtime.framework, c_.attention_dropout);
    hbm_bandwidth_ = c_.topology.chip.device_hbm_bandwidth() * c_.calibration.hbm_efficiency;
    // Slices synchronise once a step through the cross-slice gradient reduction, so a step lasts as
    // long as the slowest slice's: each slice's step jitters by slice_step_jitter (one standard
    // deviation), and the slowest of S lands E[max of S] deviations beyond the mean. Spread over
    // the device work, as the wait scales with the step.
    slice_wait_ = 1.0 + c_.calibration.slice_step_jitter * expected_max_of_normals(c_.slices);
    PODSIM_ASSERT(peak_flops_ > 0.0 && hbm_bandwidth_ > 0.0, "topology without peak or HBM bandwidth");
}

OpCost CostModel::cost(const parallel::DeviceOp& op, const parallel::DeviceProgram& program) const {
    using parallel::OpCategory;
    OpCost out;
    if (op.category == OpCategory::host) {
        out.seconds = c_.runtime.host_overhead.value_or(c_.calibration.host_overhead(c_.runtime.framework));
        // A graph that changes every step is traced and compiled again before every step.
        if (c_.runtime.recompile_every_step) out.seconds += compile_seconds(program);
        return out;
    }
    if (op.category == OpCategory::copy) {
        // Remat offload: a DMA between HBM and pinned host memory at the chip's host link, which the
        // devices of one chip share.
        const double bandwidth =
            c_.topology.host.transfer_bandwidth_per_chip / c_.topology.chip.devices_per_chip;
        PODSIM_ASSERT(bandwidth > 0.0, "offload without a host transfer bandwidth (checked by config)");
        out.memory_seconds = op.bytes / bandwidth;
        out.seconds = out.memory_seconds;
        return out;
    }
    if (parallel::is_collective(op.category)) {
        const parallel::CommAxis& axis = program.comm_axes[static_cast<std::size_t>(op.comm_axis)];
        // ICI collectives have no fixed cost: the flow-level network model times them in the
        // simulation (network/flow_network.hpp). Only DCN, outside the torus, uses a closed form.
        if (axis.kind != parallel::ResourceKind::dcn) return out;
        auto t = collectives::closed_form_dcn(op.collective, op.collective_bytes, axis.size,
                                              c_.topology.dcn.bandwidth_per_chip /
                                                  c_.topology.chip.devices_per_chip *
                                                  c_.calibration.dcn_efficiency,
                                              c_.topology.dcn.latency);
        out.seconds = t.time + c_.calibration.collective_overhead;
        out.memory_seconds = t.bandwidth_time;
        return out;
    }
    out.memory_seconds = op.bytes / hbm_bandwidth_;
    if (op.attention_scores) out.memory_seconds *= attention_traffic_;
    if (op.category == OpCategory::matmul) {
        const double tile = static_cast<double>(std::max(1, c_.topology.chip.mxu_tile));
        out.padded_flops = 2.0 * op.mm_batch * round_up(op.mm_m, kSublaneRows) * round_up(op.mm_n, tile) *
                           round_up(op.mm_k, tile) * op.flop_scale;
        out.shape_class = matmul_shape_class(op.mm_m, op.mm_n, op.mm_k, c_.topology.chip.mxu_tile);
        out.compute_seconds = out.padded_flops / (peak_flops_ * mxu_efficiency_ *
                                                  c_.calibration.mxu_shape_factor(out.shape_class));
    }
    out.memory_bound = out.memory_seconds > out.compute_seconds;
    out.seconds =
        (std::max(out.compute_seconds, out.memory_seconds) + c_.calibration.op_overhead) * slice_wait_;
    return out;
}

double expected_max_of_normals(int n) {
    if (n <= 1) return 0.0;
    // E[max] = integral of x n phi(x) Phi(x)^(n-1) dx, by Simpson's rule on [-10, 10].
    constexpr int kSteps = 4000;
    constexpr double kLow = -10.0, kHigh = 10.0, kH = (kHigh - kLow) / kSteps;
    const double inv_sqrt_2pi = 1.0 / std::sqrt(2.0 * std::numbers::pi);
    double sum = 0.0;
    for (int i = 0; i <= kSteps; ++i) {
        const double x = kLow + kH * i;
        const double density = inv_sqrt_2pi * std::exp(-0.5 * x * x);
        const double below = 0.5 * std::erfc(-x / std::sqrt(2.0));
        const double f = x * n * density * std::pow(below, n - 1);
        sum += (i == 0 || i == kSteps ? 1.0 : (i % 2 ? 4.0 : 2.0)) * f;
    }
    return sum * kH / 3.0;
}

double CostModel::compile_seconds(const parallel::DeviceProgram& program) const {
    if (c_.runtime.compile_time) return *c_.runtime.compile_time;
    return c_.calibration.compile_time_base +
           c_.calibration.compile_time_per_op * static_cast<double>(program.ops.size());
}

namespace {

// What a compute op's cost depends on (CostModel::cost): its category and sizes.
bool same_compute(const parallel::DeviceOp& a, const parallel::DeviceOp& b) {
    return a.category == b.category && a.bytes == b.bytes && a.mm_batch == b.mm_batch && a.mm_m == b.mm_m &&
           a.mm_n == b.mm_n && a.mm_k == b.mm_k && a.flop_scale == b.flop_scale;
}

}  // namespace

std::vector<OpCost> CostModel::cost_all(const parallel::DeviceProgram& program) const {
    std::vector<OpCost> costs;
    const std::size_t n = program.ops.size();
    costs.reserve(n);
    if (program.microbatches <= 1) {
        for (const auto& op : program.ops) costs.push_back(cost(op, program));
        return costs;
    }
    // Every microbatch runs the same compute ops: an op named as one seen before (names are shared
    // by a graph op's instances) with the same sizes costs the same, and is not priced again.
    // Open addressing on the name's address: op index + 1, 0 when empty.
    std::vector<std::uint32_t> seen(std::bit_ceil(2 * n + 2), 0u);
    const std::size_t mask = seen.size() - 1;
    for (std::size_t i = 0; i < n; ++i) {
        const parallel::DeviceOp& op = program.ops[i];
        if (op.category != parallel::OpCategory::matmul && op.category != parallel::OpCategory::fusion) {
            costs.push_back(cost(op, program));
            continue;
        }
        const auto address = reinterpret_cast<std::uintptr_t>(op.name.data());
        std::size_t slot = (address * 0x9e3779b97f4a7c15ull >> 20) & mask;
        while (seen[slot] != 0 && program.ops[seen[slot] - 1].name.data() != op.name.data())
            slot = (slot + 1) & mask;
        if (seen[slot] != 0 && same_compute(program.ops[seen[slot] - 1], op)) {
            costs.push_back(costs[seen[slot] - 1]);
            continue;
        }
        costs.push_back(cost(op, program));
        seen[slot] = static_cast<std::uint32_t>(i + 1);
    }
    return costs;
}

}  // namespace podsim::cost
