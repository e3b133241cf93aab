#include <doctest/doctest.h>

#include "support.hpp"

// Memory as XLA lays it out (docs/model.md, "Memory"): prefetch under the HBM limit, flash attention,
// remat save sets.

using namespace podsim;

namespace {

run::RunSpec maxtext_22b() {
    return test::load_config("configs/maxtext-22b-fsdp-v4-128.yaml");
}

}  // namespace

TEST_CASE("the FSDP prefetch depth drops when the prefetched weights would not fit in HBM") {
    auto spec = maxtext_22b();
    spec.topology.chip.hbm_capacity = 1e15;  // no limit
    auto ahead = run::simulate(spec);
    auto none_ahead_spec = spec;
    none_ahead_spec.runtime.prefetch_depth = 0;
    auto none_ahead = run::simulate(none_ahead_spec);
    REQUIRE(ahead.report.prefetch_depth == 1);
    // One group fewer in flight: the peak drops, and the un-prefetched gathers are exposed.
    REQUIRE(none_ahead.memory.peak_bytes < ahead.memory.peak_bytes);
    CHECK(none_ahead.report.exposed_communication_s > ahead.report.exposed_communication_s);

    // A chip between the two peaks: podsim issues the gathers later, as XLA's latency-hiding
    // scheduler does under its memory limit, so the step fits and is as slow as without prefetch.
    spec.topology.chip.hbm_capacity = (ahead.memory.peak_bytes + none_ahead.memory.peak_bytes) / 2;
    auto limited = run::simulate(spec);
    CHECK(limited.memory.fits);
    CHECK(limited.report.prefetch_depth == 0);
    CHECK(limited.report.prefetch_limited_by_memory);
    CHECK(limited.report.step_time_s == doctest::Approx(none_ahead.report.step_time_s));

    // Below both peaks nothing helps: the configured depth is reported with the overflow.
    spec.topology.chip.hbm_capacity = none_ahead.memory.peak_bytes / 2;
    auto over = run::simulate(spec);
    CHECK_FALSE(over.memory.fits);
    CHECK(over.report.prefetch_depth == 1);
    CHECK_FALSE(over.report.prefetch_limited_by_memory);
}

TEST_CASE("flash attention keeps the S x S scores out of HBM and skips causal blocks") {
    auto spec = maxtext_22b();
    auto dot = run::simulate(spec);
    spec.training.attention = workload::Attention::flash;
    auto flash = run::simulate(spec);
    // Per chip: 16 sequences x 24 heads x 1024 x 1024 scores in bf16 = 768 MiB per tensor, written by
    // the scores matmul and by softmax: dot-product attention holds them, flash never does.
    CHECK(flash.memory.peak_bytes < dot.memory.peak_bytes - 768.0 * 1024 * 1024);
    // Executed attention FLOPs: with 512-token blocks a 1024-token causal sequence computes 3 of 4
    // blocks; the forward runs QK^T and PV (2 matmuls), the backward 5 (FlashAttention-2), the
    // recompute under remat full the forward again: (2 + 5 + 2) x 3/4 = 6.75 score-sized matmuls
    // against dot-product's 2 + 4 + 2 = 8.
    const double scores = 2.0 * 16 * 24 * 1024.0 * 1024 * 256;  // one score-sized matmul per layer
    const double removed = (8.0 - 6.75) * scores * 48;          // per chip, 48 layers
    CHECK(dot.report.hardware_flops_per_step - flash.report.hardware_flops_per_step ==
          doctest::Approx(removed * 64).epsilon(1e-6));
}

TEST_CASE("MaxText remat policies save what their JAX policy names") {
    auto spec = maxtext_22b();
    auto activations = [&](workload::Remat remat) {
        auto s = spec;
        s.training.remat = remat;
        s.training.attention = workload::Attention::flash;
        s.topology.chip.hbm_capacity = 1e15;
        return run::simulate(s).memory.at_peak.activations;
    };
    const double full = activations(workload::Remat::full);
    const double qkv = activations(workload::Remat::save_qkv_proj);
    const double except_mlp = activations(workload::Remat::save_dot_except_mlp);
    const double except_mlpwi = activations(workload::Remat::save_dot_except_mlpwi);
    const double minimal = activations(workload::Remat::minimal);
    const double none = activations(workload::Remat::none);
    // Each policy saves a superset of the one before it.
    CHECK(full < qkv);
    CHECK(qkv < except_mlp);
    // mlpwo is podsim's mlp_down with the residual add fused in: the layer's output, which every
    // policy keeps, so saving it by name adds nothing here.
    CHECK(except_mlp == doctest::Approx(except_mlpwi));
    CHECK(except_mlpwi < minimal);
    CHECK(minimal < none);
    // save_qkv_proj adds the fused QKV output of every layer over full remat: 16 x 1024 tokens x
    // (3 x 24 x 256) x 2 bytes = 36 MiB per layer. The peak is in the last layer's backward, where
    // full remat holds that layer's recomputed QKV too: 47 layers' worth of difference.
    CHECK(qkv - full == doctest::Approx(47 * 16 * 1024.0 * 3 * 24 * 256 * 2).epsilon(0.002));
}

TEST_CASE("remat offload moves saved activations to host memory over the chip's host link") {
    auto spec = maxtext_22b();
    spec.training.attention = workload::Attention::flash;
    spec.training.remat = workload::Remat::minimal;
    auto saved = run::simulate(spec);
    spec.training.remat = workload::Remat::minimal_offloaded;
    auto offloaded = run::simulate(spec);
    // Every offloaded projection output (QKV, out_proj and mlpwi: mlp_down is the layer output, which
    // stays in HBM) goes to the host and comes back once.
    double copied = 0.0;
    int copies = 0;
    for (std::size_t i = 0; i < offloaded.program.ops.size(); ++i) {
        const auto& op = offloaded.program.ops[i];
        if (op.category != parallel::OpCategory::copy) continue;
        ++copies;
        copied += op.bytes;
        // At the v4 host link (PCIe Gen3 x16, 15.75 GB/s per direction).
        CHECK(offloaded.costs[i].seconds == doctest::Approx(op.bytes / 15.75e9));
    }
    CHECK(copies == 48 * 3 * 2);
    const double per_layer = 16 * 1024.0 * (3 * 24 * 256 + 6144 + 24576) * 2;  // qkv, out_proj, mlpwi in bf16
    CHECK(copied == doctest::Approx(2 * 48 * per_layer));
    CHECK(offloaded.memory.peak_bytes < saved.memory.peak_bytes);
    CHECK(offloaded.report.step_time_s >= saved.report.step_time_s);
}

TEST_CASE("the memory profile frees before it allocates at the same instant") {
    // Three temporaries one after another, each freed when its consumer (the next op) ends:
    // op 0 holds 100 bytes over [0, 4096) and until op 1 ends at 2^23 ps, op 1 holds 50, op 2 (70)
    // starts at 2^23 + 0. At 2^23 op 0's 100 bytes go before op 2's 70 arrive, so the peak is
    // 100 + 50 = 150 bytes at 4096 ps, not 50 + 100 + 70 = 220 at 2^23.
    parallel::DeviceProgram program;
    program.resources.push_back({"compute", parallel::ResourceKind::compute, -1});
    scheduler::Timeline timeline;
    const double output_bytes[] = {100.0, 50.0, 70.0};
    const core::Time bounds[] = {0, 4096, core::Time{1} << 23, (core::Time{1} << 23) + 1};
    for (int i = 0; i < 3; ++i) {
        parallel::DeviceOp op;
        op.category = parallel::OpCategory::fusion;
        op.output_bytes = output_bytes[i];
        program.ops.push_back(op);
        timeline.spans.push_back({i, 0, bounds[i], bounds[i + 1]});
    }
    timeline.step_time = bounds[3];
    auto profile = memory::profile_memory(program, timeline, 1e9);
    CHECK(profile.peak_bytes == 150.0);
    CHECK(profile.peak_time == 4096);
    // Live bytes after each instant: 100, 150, 120 (the free, then the allocation), 0. Changes at
    // one instant make one sample.
    REQUIRE(profile.samples.size() == 4);
    CHECK(profile.samples[0].live_bytes == 100.0);
    CHECK(profile.samples[1].live_bytes == 150.0);
    CHECK(profile.samples[2].time == core::Time{1} << 23);
    CHECK(profile.samples[2].live_bytes == 120.0);
    CHECK(profile.samples[3].live_bytes == 0.0);
}

TEST_CASE("frees come before allocations at one instant whatever kind of change they are") {
    // The profile merges its changes from separate streams (compute starts and ends, frees deferred
    // to a later op, collectives). At 20 ps three meet: op 0's saved activation (100 bytes) is freed
    // when its layer's backward (op 1) ends, op 1's temporary (10) is freed as the last compute op
    // ends, and an all-gather's 60 bytes arrive. Frees first: the peak stays at 110 bytes at 10 ps
    // (op 0's activation and op 1's temporary), never 170 at 20 ps.
    parallel::DeviceProgram program;
    program.resources.push_back({"compute", parallel::ResourceKind::compute, -1});
    scheduler::Timeline timeline;
    auto add = [&](parallel::DeviceOp op, core::Time start, core::Time end) {
        program.ops.push_back(op);
        timeline.spans.push_back({static_cast<int>(program.ops.size()) - 1, 0, start, end});
    };
    // The all-gather comes first in program order, so its change is made before the frees: only
    // the order by size puts them first.
    parallel::DeviceOp gather;
    gather.category = parallel::OpCategory::all_gather;
    gather.param_group = 0;
    gather.collective_bytes = 60.0;
    add(gather, 20, 30);
    parallel::DeviceOp forward;
    forward.category = parallel::OpCategory::fusion;
    forward.phase = workload::Phase::forward;
    forward.layer = 0;
    forward.kept_for_backward = true;
    forward.output_bytes = 100.0;
    add(forward, 0, 10);
    parallel::DeviceOp backward = forward;
    backward.phase = workload::Phase::backward;
    backward.kept_for_backward = false;
    backward.output_bytes = 10.0;
    add(backward, 10, 20);
    timeline.step_time = 30;
    auto profile = memory::profile_memory(program, timeline, 1e9);
    CHECK(profile.peak_bytes == 110.0);
    CHECK(profile.peak_time == 10);
    CHECK(profile.at_peak.activations == 100.0);
    CHECK(profile.at_peak.temporaries == 10.0);
    // Live bytes after each instant: 100, 110, 60 (both frees, then the gather), 0.
    REQUIRE(profile.samples.size() == 4);
    CHECK(profile.samples[2].time == 20);
    CHECK(profile.samples[2].live_bytes == 60.0);
    CHECK(profile.samples[3].live_bytes == 0.0);
}
