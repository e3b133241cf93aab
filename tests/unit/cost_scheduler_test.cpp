#include <doctest/doctest.h>

#include <cmath>
#include <numbers>

#include "config/load.hpp"
#include "cost/cost_model.hpp"
#include "scheduler/scheduler.hpp"
#include "support.hpp"

using namespace podsim;
using parallel::DeviceOp;
using parallel::OpCategory;

TEST_CASE("matmul roofline with MXU padding") {
    auto v4 = config::load_topology_file(test::source_path("topologies/tpu-v4.yaml"));
    parallel::RuntimeSpec runtime;
    cost::Calibration cal = cost::Calibration::defaults();
    cal.mxu_efficiency = 0.5;
    cal.op_overhead = 0.0;
    cost::CostModel model(cost::CostContext{v4, runtime, cal, core::DType::bf16});
    parallel::DeviceProgram program;

    DeviceOp big;
    big.category = OpCategory::matmul;
    big.mm_m = big.mm_n = big.mm_k = 4096;
    big.flops = 2.0 * 4096 * 4096 * 4096;  // 1.374e11
    big.bytes = 3.0 * 4096 * 4096 * 2;     // two inputs and the output in bf16
    auto c = model.cost(big, program);
    // Compute-bound: 1.374e11 / (275e12 * 0.5) = 9.995e-4 s; memory 1.0e8 / (1.2e12 * 0.85) = 9.9e-5 s.
    CHECK(c.seconds == doctest::Approx(2.0 * 4096.0 * 4096 * 4096 / (275e12 * 0.5)));
    CHECK_FALSE(c.memory_bound);

    // A 48-wide contraction is padded to the 128-wide MXU: it costs 128/48 of its FLOPs.
    DeviceOp narrow = big;
    narrow.mm_k = 48;
    narrow.flops = 2.0 * 4096 * 4096 * 48;
    narrow.bytes = 0;
    auto n = model.cost(narrow, program);
    CHECK(n.padded_flops == doctest::Approx(narrow.flops * 128 / 48));

    // A fusion is memory-bound: bytes / (1.2e12 * 0.85).
    DeviceOp fusion;
    fusion.category = OpCategory::fusion;
    fusion.bytes = 1.02e9;
    CHECK(model.cost(fusion, program).seconds == doctest::Approx(1.02e9 / (1.2e12 * 0.85)));
}

TEST_CASE("slices wait for the slowest: E[max of S normals] standard deviations of device work") {
    // Closed forms: E[max of 2] = 1/sqrt(pi), of 3 = 3/(2 sqrt(pi)); of 5 = 1.16296 (tables of
    // normal order statistics, e.g. Harter 1961).
    CHECK(cost::expected_max_of_normals(1) == 0.0);
    CHECK(cost::expected_max_of_normals(2) ==
          doctest::Approx(1.0 / std::sqrt(std::numbers::pi)).epsilon(1e-9));
    CHECK(cost::expected_max_of_normals(3) ==
          doctest::Approx(1.5 / std::sqrt(std::numbers::pi)).epsilon(1e-9));
    CHECK(cost::expected_max_of_normals(5) == doctest::Approx(1.16296).epsilon(1e-5));
    CHECK(cost::expected_max_of_normals(32) > cost::expected_max_of_normals(8));

    auto v4 = config::load_topology_file(test::source_path("topologies/tpu-v4.yaml"));
    parallel::RuntimeSpec runtime;
    cost::Calibration cal = cost::Calibration::defaults();
    cal.slice_step_jitter = 0.07;
    parallel::DeviceProgram program;
    DeviceOp fusion;
    fusion.category = OpCategory::fusion;
    fusion.bytes = 1.02e9;
    const double one =
        cost::CostModel(cost::CostContext{v4, runtime, cal, core::DType::bf16}).cost(fusion, program).seconds;
    const double two = cost::CostModel(cost::CostContext{v4, runtime, cal, core::DType::bf16, false, 2})
                           .cost(fusion, program)
                           .seconds;
    CHECK(two == doctest::Approx(one * (1.0 + 0.07 / std::sqrt(std::numbers::pi))));
}

TEST_CASE("DCN bandwidth per chip from each generation's hosts") {
    // v5p: 50 Gbps per chip (Cloud TPU v5p docs); v5e: 2 x 100 Gbps NICs per 8-chip host (Cloud TPU
    // v5e docs); v4: PaLM's 81 Tbps over 1536 hosts, 52.7 Gb/s per 4-chip host.
    auto bandwidth = [](const char* name) {
        return config::load_topology_file(test::source_path(std::string("topologies/") + name))
            .dcn.bandwidth_per_chip;
    };
    CHECK(bandwidth("tpu-v5p.yaml") == doctest::Approx(50e9 / 8));
    CHECK(bandwidth("tpu-v5e.yaml") == doctest::Approx(200e9 / 8 / 8));
    CHECK(bandwidth("tpu-v4.yaml") == doctest::Approx(52.7e9 / 8 / 4));
}

TEST_CASE("matmul shape classes and their efficiency factors") {
    using cost::MatmulShapeClass;
    // Narrowest dimension in 128-wide MXU tiles: under 2 small, 2 to 8 medium, 8 and up large.
    CHECK(cost::matmul_shape_class(1024, 1024, 128, 128) == MatmulShapeClass::small);  // attention, head 128
    CHECK(cost::matmul_shape_class(8192, 255, 4096, 128) == MatmulShapeClass::small);
    CHECK(cost::matmul_shape_class(2048, 2048, 256, 128) == MatmulShapeClass::medium);  // head 256
    CHECK(cost::matmul_shape_class(8192, 384, 1152, 128) == MatmulShapeClass::medium);  // ViT d=384
    CHECK(cost::matmul_shape_class(32768, 3072, 9216, 128) == MatmulShapeClass::large);
    CHECK(cost::matmul_shape_class(1024, 1024, 1024, 128) == MatmulShapeClass::large);
    // On a 256-wide MXU (v6e) the same 256 is one tile: small.
    CHECK(cost::matmul_shape_class(2048, 2048, 256, 256) == MatmulShapeClass::small);

    auto v4 = config::load_topology_file(test::source_path("topologies/tpu-v4.yaml"));
    parallel::RuntimeSpec runtime;
    cost::Calibration cal = cost::Calibration::defaults();
    cal.mxu_efficiency = 0.8;
    cal.mxu_small_shape_factor = 0.5;
    cal.op_overhead = 0.0;
    cost::CostModel model(cost::CostContext{v4, runtime, cal, core::DType::bf16});
    parallel::DeviceProgram program;
    DeviceOp op;
    op.category = OpCategory::matmul;
    op.mm_m = 8192;
    op.mm_n = 8192;
    op.mm_k = 128;  // small: efficiency 0.8 x 0.5
    op.flops = 2.0 * 8192 * 8192 * 128;
    auto small = model.cost(op, program);
    CHECK(small.shape_class == MatmulShapeClass::small);
    CHECK(small.compute_seconds == doctest::Approx(op.flops / (275e12 * 0.8 * 0.5)));
    op.mm_k = 1024;  // large: the factor does not apply
    op.flops = 2.0 * 8192 * 8192 * 1024;
    auto large = model.cost(op, program);
    CHECK(large.shape_class == MatmulShapeClass::large);
    CHECK(large.compute_seconds == doctest::Approx(op.flops / (275e12 * 0.8)));
}

namespace {
// compute A (1 ms) -> all-gather C (2 ms); compute B (1 ms) independent; compute D (1 ms) needs C.
parallel::DeviceProgram small_program() {
    parallel::DeviceProgram p;
    p.resources = {{"compute", parallel::ResourceKind::compute, -1},
                   {"ici:fsdp", parallel::ResourceKind::ici, 0}};
    p.comm_axes = {{"fsdp", parallel::ResourceKind::ici, 4, {}}};
    DeviceOp a, b, c, d;
    a.name = "A";
    a.category = OpCategory::matmul;
    c.name = "C";
    c.category = OpCategory::all_gather;
    c.resource = 1;
    c.comm_axis = 0;
    c.deps = {0};
    b.name = "B";
    b.category = OpCategory::matmul;
    d.name = "D";
    d.category = OpCategory::matmul;
    d.deps = {1};
    p.ops = {a, c, b, d};
    return p;
}
std::vector<cost::OpCost> durations(std::vector<double> seconds) {
    std::vector<cost::OpCost> out;
    for (double s : seconds) out.push_back(cost::OpCost{s, 0, 0, 0, false});
    return out;
}
}  // namespace

TEST_CASE("async collectives overlap compute; synchronous ones block it") {
    auto program = small_program();
    auto costs = durations({1e-3, 2e-3, 1e-3, 1e-3});
    parallel::RuntimeSpec async;
    async.async_collectives = true;
    auto t = scheduler::schedule(program, costs, async);
    // A 0-1, C 1-3 overlapping B 1-2, D 3-4.
    CHECK(t.spans[2].start == core::kMillisecond);
    CHECK(t.step_time == 4 * core::kMillisecond);

    parallel::RuntimeSpec sync;
    sync.async_collectives = false;
    auto s = scheduler::schedule(program, costs, sync);
    // B waits for C: A 0-1, C 1-3, B 3-4, D 4-5.
    CHECK(s.spans[2].start == 3 * core::kMillisecond);
    CHECK(s.step_time == 5 * core::kMillisecond);
}

namespace {
// `layers` identical layers: an all-gather prefetched two layers ahead (it waits for the matmul of
// the layer two before), then the layer's matmul, which waits for its gather.
parallel::DeviceProgram layered_program(int layers) {
    parallel::DeviceProgram p;
    p.resources = {{"compute", parallel::ResourceKind::compute, -1},
                   {"ici:fsdp", parallel::ResourceKind::ici, 0}};
    p.comm_axes = {{"fsdp", parallel::ResourceKind::ici, 4, {}}};
    for (int l = 0; l < layers; ++l) {
        DeviceOp gather;
        gather.category = OpCategory::all_gather;
        gather.resource = 1;
        gather.comm_axis = 0;
        gather.layer = l;
        if (l >= 2) gather.deps = {2 * (l - 2) + 1};
        DeviceOp matmul;
        matmul.category = OpCategory::matmul;
        matmul.layer = l;
        matmul.deps = {2 * l};
        p.ops.push_back(gather);
        p.ops.push_back(matmul);
    }
    return p;
}
}  // namespace

TEST_CASE("repeated layers are jumped over once their state repeats, with the same timeline") {
    auto program = layered_program(20);
    std::vector<double> seconds;
    for (int l = 0; l < 20; ++l) seconds.insert(seconds.end(), {1.5e-3, 1e-3});
    auto costs = durations(seconds);
    parallel::RuntimeSpec runtime;
    runtime.async_collectives = true;
    auto every = scheduler::schedule(program, costs, runtime);
    auto jumped = scheduler::schedule(program, costs, runtime, nullptr, {.jump_periods = true});
    // The gathers are the bottleneck: gather l runs 1.5 l .. 1.5 (l + 1) ms and matmul l the
    // millisecond after, so the step is 20 x 1.5 + 1 = 31 ms.
    CHECK(every.step_time == 31 * core::kMillisecond);
    CHECK(every.periods_jumped() == 0);
    CHECK(jumped.periods_jumped() > 0);
    // Each jump is recorded: one period is one layer (a gather and a matmul) of 1.5 ms.
    for (const auto& jump : jumped.jumps) {
        CHECK(jump.length == 2);
        CHECK(jump.period == core::from_seconds(1.5e-3));
    }
    CHECK(every.jumps.empty());
    CHECK(jumped.step_time == every.step_time);
    CHECK(jumped.events == every.events);
    for (std::size_t i = 0; i < program.ops.size(); ++i) {
        CAPTURE(i);
        CHECK(jumped.spans[i].op == every.spans[i].op);
        CHECK(jumped.spans[i].resource == every.spans[i].resource);
        CHECK(jumped.spans[i].start == every.spans[i].start);
        CHECK(jumped.spans[i].end == every.spans[i].end);
    }
    // A layer that differs (a longer matmul in layer 12) splits the run of identical layers; the
    // timeline still agrees with the op-by-op one.
    costs[2 * 12 + 1].seconds = 4e-3;
    auto split_every = scheduler::schedule(program, costs, runtime);
    auto split_jumped = scheduler::schedule(program, costs, runtime, nullptr, {.jump_periods = true});
    CHECK(split_jumped.step_time == split_every.step_time);
    for (std::size_t i = 0; i < program.ops.size(); ++i) {
        CAPTURE(i);
        CHECK(split_jumped.spans[i].start == split_every.spans[i].start);
        CHECK(split_jumped.spans[i].end == split_every.spans[i].end);
    }
}

TEST_CASE("storage lent from one schedule to the next changes no timeline") {
    // A ScheduleScratch keeps the scheduler's arrays and period snapshots between runs. Runs of
    // programs of other lengths, with and without jumps and watched periods, in between must not
    // change what the next run gives: each is compared with a run that has no scratch.
    auto costs_of = [](int layers, int slow_layer) {
        std::vector<double> seconds;
        for (int l = 0; l < layers; ++l)
            seconds.insert(seconds.end(), {1.5e-3, l == slow_layer ? 4e-3 : 1e-3});
        return durations(seconds);
    };
    scheduler::ScheduleScratch scratch;
    int repeated = 0;  // watched periods whose state repeated: their snapshots were compared
    struct Case {
        int layers, slow_layer;
        bool jump, watch, async;
    };
    for (const Case c : {Case{20, -1, true, false, true}, Case{8, 3, false, false, true},
                         Case{20, 12, true, true, false}, Case{30, -1, true, true, true},
                         Case{12, -1, false, true, false}, Case{20, -1, true, false, true}}) {
        CAPTURE(c.layers);
        parallel::RuntimeSpec runtime;
        runtime.async_collectives = c.async;
        const auto program = layered_program(c.layers);
        const auto costs = costs_of(c.layers, c.slow_layer);
        std::vector<scheduler::PeriodicRegion> watch;
        if (c.watch) watch.push_back(scheduler::PeriodicRegion{12, 4, 2, 0});
        auto alone =
            scheduler::schedule(program, costs, runtime, nullptr, {.jump_periods = c.jump, .watch = watch});
        auto lent = scheduler::schedule(program, costs, runtime, nullptr,
                                        {.jump_periods = c.jump, .watch = watch, .scratch = &scratch});
        CHECK(lent.step_time == alone.step_time);
        CHECK(lent.events == alone.events);
        CHECK(lent.jumps.size() == alone.jumps.size());
        CHECK(lent.regions.size() == alone.regions.size());
        REQUIRE(lent.watched.size() == alone.watched.size());
        for (std::size_t w = 0; w < lent.watched.size(); ++w) {
            CHECK(lent.watched[w].repeated == alone.watched[w].repeated);
            repeated += lent.watched[w].repeated ? 1 : 0;
        }
        REQUIRE(lent.spans.size() == alone.spans.size());
        for (std::size_t i = 0; i < program.ops.size(); ++i) {
            CAPTURE(i);
            CHECK(lent.spans[i].start == alone.spans[i].start);
            CHECK(lent.spans[i].end == alone.spans[i].end);
        }
        if (c.jump && c.slow_layer < 0) CHECK(lent.periods_jumped() > 0);
    }
    CHECK(repeated > 0);
}

TEST_CASE("two-block candidates are identical where every op repeats the one a period before") {
    // 20 identical layers of 2 ops (gather 2l, matmul 2l + 1); layer 9's matmul (op 19) takes
    // longer, and the gathers of layers 0 and 1 (ops 0, 2) wait for nothing. With a period of 4 ops
    // (two layers), op i differs from op i - 4 at i = 4, 6 (predecessors), 19 and 23 (durations).
    // A candidate from `first` is identical when none of those is in its second block
    // [first + 4, first + 8), and it ends within the 40 ops.
    auto program = layered_program(20);
    std::vector<core::Time> duration(program.ops.size(), core::kMillisecond);
    duration[19] = 2 * core::kMillisecond;
    std::vector<const void*> transfer(program.ops.size(), nullptr);
    std::vector<int> network(program.ops.size(), -1);
    std::vector<std::size_t> pred_begin{0};
    std::vector<int> preds;
    for (const auto& op : program.ops) {
        for (int d : op.deps) preds.push_back(d);
        pred_begin.push_back(preds.size());
    }
    const scheduler::OpBehaviour behaviour{duration, transfer, network, pred_begin, preds};
    std::vector<scheduler::PeriodicRegion> regions;
    for (std::size_t first : {0, 4, 6, 8, 10, 12, 14, 16, 20, 32, 34})
        regions.push_back(scheduler::PeriodicRegion{first, 4, 2, 0});
    auto identical = scheduler::identical_two_blocks(program, behaviour, regions);
    // first 0: op 4 and 6; 12, 14: op 19; 16: op 23; 34: past the end.
    const std::vector<bool> expected{false, true, true, true, true, false, false, false, true, true, false};
    CHECK(identical == expected);
    // A gather waits for the matmul two layers before, 3 ops back: the span of an identical region.
    CHECK(regions[1].dependency_span == 3);
}

TEST_CASE("pricing a program prices each op as on its own, repeated microbatches included") {
    // cost_all prices a compute op repeated in later microbatches once; the costs must be those of
    // pricing every op by itself.
    auto spec = test::run_from_text(R"(
schema: podsim.run/v1
model: gpt2-small
topology: tpu-v4
slice: 2x2x2
mesh: {data: 2, fsdp: 4}
training: {global_batch: 64, seq_len: 1024, optimizer: adam, remat: full, microbatches: 4}
)");
    auto sim = run::simulate(spec);
    REQUIRE(sim.program.microbatches == 4);
    cost::CostModel model(
        cost::CostContext{spec.topology, spec.runtime, spec.calibration, spec.training.dtype});
    const auto costs = model.cost_all(sim.program);
    REQUIRE(costs.size() == sim.program.ops.size());
    int matmuls = 0;
    for (std::size_t i = 0; i < costs.size(); ++i) {
        const auto alone = model.cost(sim.program.ops[i], sim.program);
        CAPTURE(i);
        CHECK(costs[i].seconds == alone.seconds);
        CHECK(costs[i].compute_seconds == alone.compute_seconds);
        CHECK(costs[i].memory_seconds == alone.memory_seconds);
        CHECK(costs[i].padded_flops == alone.padded_flops);
        CHECK(costs[i].memory_bound == alone.memory_bound);
        CHECK(costs[i].shape_class == alone.shape_class);
        if (sim.program.ops[i].category == OpCategory::matmul) ++matmuls;
    }
    CHECK(matmuls > 4 * 12);  // every layer's matmuls in each of the 4 microbatches
}
