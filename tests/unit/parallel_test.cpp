#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "parallel/parallelism.hpp"
#include "scheduler/scheduler.hpp"
#include "support.hpp"
#include "workload/model_spec.hpp"

// Collective bytes per chip, derived by hand for each parallelism (GPT-2 small: d = 768, 12 layers,
// 124,439,808 parameters in 14 groups: embedding, 12 blocks, head). These configs run under JAX
// (the default framework), whose FSDP gathers and gradient reduce-scatters move bf16 (2 bytes: the
// shard is cast to the compute dtype before GSPMD gathers it); a data-only all-reduce moves the
// fp32 gradients (4 bytes).

using namespace podsim;

namespace {

struct Traffic {
    std::map<std::string, double> bytes;  // "category@resource"
    std::map<std::string, int> count;
};

Traffic traffic(const run::Simulation& sim) {
    Traffic t;
    for (const auto& op : sim.program.ops) {
        if (!parallel::is_collective(op.category)) continue;
        std::string key = std::string(parallel::category_name(op.category)) + "@" +
                          sim.program.resources[static_cast<std::size_t>(op.resource)].name;
        t.bytes[key] += op.collective_bytes;
        ++t.count[key];
    }
    return t;
}

run::Simulation gpt2_small(const std::string& slice, const std::string& mesh, const std::string& extra = "") {
    return run::simulate(test::run_from_text(R"(
schema: podsim.run/v1
model: gpt2-small
topology: tpu-v4
slice: )" + slice + R"(
mesh: )" + mesh + R"(
training: {global_batch: 32, seq_len: 1024, optimizer: adam, remat: none)" +
                                             extra + R"(}
)"));
}

const double kParams = 124'439'808.0;
const double kGroups = 14;

}  // namespace

TEST_CASE("data: one fp32 gradient all-reduce per parameter group, all parameters once") {
    auto t = traffic(gpt2_small("2x2x1", "{data: 4}"));
    CHECK(t.bytes["all-reduce@ici:data"] == doctest::Approx(kParams * 4));
    CHECK(t.count["all-reduce@ici:data"] == kGroups);
    CHECK(t.bytes.size() == 1);
}

TEST_CASE("fsdp: every group gathered for the forward and the backward, gradients reduce-scattered") {
    auto t = traffic(gpt2_small("2x2x1", "{fsdp: 4}"));
    CHECK(t.bytes["all-gather@ici:fsdp"] == doctest::Approx(2 * kParams * 2));
    CHECK(t.count["all-gather@ici:fsdp"] == 2 * kGroups);
    CHECK(t.bytes["reduce-scatter@ici:fsdp"] == doctest::Approx(kParams * 2));
    CHECK(t.count["reduce-scatter@ici:fsdp"] == kGroups);
    // PyTorch/XLA FSDP converts each fp32 shard to its compute_dtype (bf16, 2 bytes) before the
    // all-gather and reduce-scatters gradients in it; fp32_reduce_scatter moves the gradients in fp32.
    auto pt = traffic(gpt2_small("2x2x1", "{fsdp: 4}", "}\nruntime: {framework: pytorch-xla"));
    CHECK(pt.bytes["all-gather@ici:fsdp"] == doctest::Approx(2 * kParams * 2));
    CHECK(pt.bytes["reduce-scatter@ici:fsdp"] == doctest::Approx(kParams * 2));
    auto fp32 = traffic(
        gpt2_small("2x2x1", "{fsdp: 4}", "}\nruntime: {framework: pytorch-xla, fp32_reduce_scatter: true"));
    CHECK(fp32.bytes["all-gather@ici:fsdp"] == doctest::Approx(2 * kParams * 2));
    CHECK(fp32.bytes["reduce-scatter@ici:fsdp"] == doctest::Approx(kParams * 4));
    CHECK(fp32.count["reduce-scatter@ici:fsdp"] == kGroups);
}

TEST_CASE("tensor: an activation all-reduce after each row-parallel matmul and input gradient") {
    // 32 sequences x 1024 tokens x 768 x 2 bytes (bf16) = 50,331,648 bytes per all-reduce; forward:
    // attn_out and mlp_down; backward: qkv and mlp_up input gradients; 4 per layer. Plus one for
    // the vocab-parallel LM head's input gradient (it contracts over the split vocabulary).
    auto t = traffic(gpt2_small("2x2x1", "{tensor: 4}"));
    const double activation = 32.0 * 1024 * 768 * 2;
    CHECK(t.count["all-reduce@ici:tensor"] == 12 * 4 + 1);
    CHECK(t.bytes["all-reduce@ici:tensor"] == doctest::Approx((12 * 4 + 1) * activation));
}

TEST_CASE("tensor with sequence parallelism: all-gather and reduce-scatter instead of all-reduce") {
    auto t = traffic(gpt2_small("2x2x1", "{tensor: 4}", ", tensor_sequence: true"));
    const double activation = 32.0 * 1024 * 768 * 2;
    CHECK(t.count["all-reduce@ici:tensor"] == 0);
    // As above, the LM head adds one of each: a gather of its input, a scatter of its input gradient.
    CHECK(t.count["all-gather@ici:tensor"] == 12 * 4 + 1);
    CHECK(t.count["reduce-scatter@ici:tensor"] == 12 * 4 + 1);
    CHECK(t.bytes["all-gather@ici:tensor"] == doctest::Approx((12 * 4 + 1) * activation));
    CHECK(t.bytes["reduce-scatter@ici:tensor"] == doctest::Approx((12 * 4 + 1) * activation));
    // Same bytes on the wire as all-reduce (RS + AG), less activation memory.
    auto plain = gpt2_small("2x2x1", "{tensor: 4}").report;
    auto sequence = gpt2_small("2x2x1", "{tensor: 4}", ", tensor_sequence: true").report;
    CHECK(sequence.memory.activations_bytes < plain.memory.activations_bytes);
}

TEST_CASE("fsdp x data and DCN: reduce-scatter over fsdp, then all-reduce of the shard") {
    auto t = traffic(gpt2_small("2x2x2", "{data: 2, fsdp: 4}"));
    CHECK(t.bytes["reduce-scatter@ici:fsdp"] == doctest::Approx(kParams * 2));
    CHECK(t.bytes["all-reduce@ici:data"] == doctest::Approx(kParams * 2 / 4));
    auto spec = test::load_config("configs/gpt2-xl-multislice-2x-v4-32.yaml");
    auto sim = run::simulate(spec);
    auto m = traffic(sim);
    const double xl = static_cast<double>(workload::count_params(spec.model).total);
    CHECK(m.bytes["all-reduce@dcn"] ==
          doctest::Approx(xl * (spec.runtime.framework == parallel::Framework::jax ? 2 : 4) / 16));
}

namespace {

int op_index(const parallel::DeviceProgram& program, std::string_view name) {
    for (std::size_t i = 0; i < program.ops.size(); ++i)
        if (program.ops[i].name == name) return static_cast<int>(i);
    FAIL("no op " << name);
    return -1;
}

double busy(const run::Simulation& sim, parallel::OpCategory category) {
    double seconds = 0.0;
    for (std::size_t i = 0; i < sim.program.ops.size(); ++i) {
        if (sim.program.ops[i].category != category) continue;
        seconds += core::to_seconds(sim.timeline.spans[i].end - sim.timeline.spans[i].start);
    }
    return seconds;
}

}  // namespace

TEST_CASE("PyTorch/XLA FSDP gathers as all-reduces of the zero-padded shard") {
    // torch_xla/core/xla_model.py (2.0 to 2.5): all_gather with pin_layout=True on TPU returns
    // _all_gather_using_all_reduce, an all-reduce of the shard padded with zeros to the full size;
    // XlaFullyShardedDataParallel passes pin_layout_in_collective_ops, True by default.
    auto pt = gpt2_small("2x2x1", "{fsdp: 4}", "}\nruntime: {framework: pytorch-xla");
    auto plain =
        gpt2_small("2x2x1", "{fsdp: 4}", "}\nruntime: {framework: pytorch-xla, gather_via_all_reduce: false");
    auto jax = gpt2_small("2x2x1", "{fsdp: 4}");
    int gathers = 0;
    for (std::size_t i = 0; i < pt.program.ops.size(); ++i) {
        if (pt.program.ops[i].category != parallel::OpCategory::all_gather) continue;
        ++gathers;
        // The same gathered weights (what memory counts), at an all-reduce's price.
        CHECK(pt.program.ops[i].collective == collectives::CollectiveKind::all_reduce);
        CHECK(plain.program.ops[i].collective == collectives::CollectiveKind::all_gather);
        CHECK(pt.program.ops[i].collective_bytes == plain.program.ops[i].collective_bytes);
    }
    CHECK(gathers == 2 * kGroups);
    for (const auto& op : jax.program.ops)
        if (op.category == parallel::OpCategory::all_gather)
            CHECK(op.collective == collectives::CollectiveKind::all_gather);
    // An all-reduce moves twice an all-gather's bytes (reduce-scatter, then all-gather): on the
    // 2x2x1 mesh the gathers take twice as long, but for the latency of the extra steps.
    const double ratio =
        busy(pt, parallel::OpCategory::all_gather) / busy(plain, parallel::OpCategory::all_gather);
    CHECK(ratio > 1.9);
    CHECK(ratio < 2.05);
}

TEST_CASE("async collectives: an input gradient reduced over tensor runs before its weight gradient") {
    // XLA's latency-hiding scheduler fills an async collective's wait with independent work: the
    // all-reduce of mlp_up's input gradient runs under mlp_up's weight gradient.
    auto jax = gpt2_small("2x2x1", "{tensor: 4}");
    const auto& p = jax.program;
    const int dgrad = op_index(p, "layer5.mlp_up.dgrad");
    const int wgrad = op_index(p, "layer5.mlp_up.wgrad");
    const int reduce = op_index(p, "layer5.mlp_up.dgrad.all-reduce");
    CHECK(dgrad < wgrad);
    const auto& spans = jax.timeline.spans;
    CHECK(spans[static_cast<std::size_t>(reduce)].start < spans[static_cast<std::size_t>(wgrad)].end);
    CHECK(spans[static_cast<std::size_t>(reduce)].end > spans[static_cast<std::size_t>(wgrad)].start);
    // Synchronous collectives block the compute either way: lowering's order stays.
    auto sync = gpt2_small("2x2x1", "{tensor: 4}", "}\nruntime: {async_collectives: false");
    CHECK(op_index(sync.program, "layer5.mlp_up.wgrad") < op_index(sync.program, "layer5.mlp_up.dgrad"));
    // Attention's two backward matmuls reduce nothing over tensor (heads are split): untouched.
    CHECK(op_index(p, "layer5.attn_scores.grad_rhs") < op_index(p, "layer5.attn_scores.grad_lhs"));
}

TEST_CASE("data inside a slice and across slices: the DCN carries one piece per chip of each slice") {
    // Hierarchical all-reduce: reduce-scatter over the slice's data axis, all-reduce of the 1/4
    // piece over DCN, all-gather over the slice (fp32 gradients, 4 bytes).
    auto sim = run::simulate(test::run_from_text(R"(
schema: podsim.run/v1
model: gpt2-small
topology: tpu-v4
slice: 2x2x1
slices: 2
mesh: {ici: {data: 4}, dcn: {data: 2}}
training: {global_batch: 32, seq_len: 1024, optimizer: adam, remat: none}
)"));
    auto t = traffic(sim);
    CHECK(t.bytes["reduce-scatter@ici:data"] == doctest::Approx(kParams * 4));
    CHECK(t.bytes["all-reduce@dcn"] == doctest::Approx(kParams * 4 / 4));
    CHECK(t.bytes["all-gather@ici:data"] == doctest::Approx(kParams * 4));
    CHECK(t.count["all-reduce@dcn"] == kGroups);
    CHECK(t.count["all-reduce@ici:data"] == 0);
}

TEST_CASE("the gradient all-reduce over DCN runs under the backward, or after it as Pathways ran PaLM's") {
    // runtime.dcn_overlap (default): XLA schedules each group's cross-slice all-reduce as an async
    // collective once its gradients are complete. false (PaLM: "the transfer does not start until
    // each core finishes computing the gradients"): the first starts after the last backward op.
    auto spec = test::load_config("configs/gpt2-xl-multislice-2x-v4-32.yaml");
    CHECK(spec.runtime.dcn_overlap);
    auto first_dcn_and_backward_end = [](const run::Simulation& sim) {
        core::Time first = -1, backward_end = 0;
        for (std::size_t i = 0; i < sim.program.ops.size(); ++i) {
            const auto& op = sim.program.ops[i];
            const auto& span = sim.timeline.spans[i];
            if (op.resource >= 0 &&
                sim.program.resources[static_cast<std::size_t>(op.resource)].kind ==
                    parallel::ResourceKind::dcn &&
                (first < 0 || span.start < first))
                first = span.start;
            if (op.category == parallel::OpCategory::matmul && op.phase == workload::Phase::backward)
                backward_end = std::max(backward_end, span.end);
        }
        return std::pair{first, backward_end};
    };
    auto overlapped = run::simulate(spec);
    auto [under_first, under_end] = first_dcn_and_backward_end(overlapped);
    CHECK(under_first < under_end);
    spec.runtime.dcn_overlap = false;
    auto after = run::simulate(spec);
    auto [after_first, after_end] = first_dcn_and_backward_end(after);
    CHECK(after_first >= after_end);
    CHECK(overlapped.report.step_time_s < after.report.step_time_s);
}

TEST_CASE("gradient accumulation: gathers and reduce-scatters per microbatch, one data all-reduce") {
    auto one = traffic(gpt2_small("2x2x2", "{data: 2, fsdp: 4}"));
    auto four = traffic(gpt2_small("2x2x2", "{data: 2, fsdp: 4}", ", microbatches: 4"));
    CHECK(four.count["all-gather@ici:fsdp"] == 4 * one.count["all-gather@ici:fsdp"]);
    CHECK(four.count["reduce-scatter@ici:fsdp"] == 4 * one.count["reduce-scatter@ici:fsdp"]);
    CHECK(four.count["all-reduce@ici:data"] == one.count["all-reduce@ici:data"]);
}

TEST_CASE("bf16 parameters with an fp32 master copy") {
    auto sim = gpt2_small("2x2x1", "{fsdp: 4}", ", param_dtype: bf16, master_dtype: fp32");
    // Adam moments in the parameter dtype (2 x 2 bytes) + the fp32 master (4 bytes), over 4 chips.
    CHECK(sim.program.optimizer_bytes == doctest::Approx(kParams * (2 * 2 + 4) / 4));
    CHECK(sim.program.params_bytes == doctest::Approx(kParams * 2 / 4));
}

TEST_CASE("host RAM: PyTorch builds the whole model in every process, deferred init does not") {
    auto spec = test::load_config("configs/gpt2-20b-fsdp-v4-128.yaml");
    const double params = static_cast<double>(workload::count_params(spec.model).total);
    auto full = run::simulate(spec).report;
    // One process per chip (PJRT), 4 chips per host, fp32.
    CHECK(full.host_peak_bytes == doctest::Approx(4 * params * 4));
    spec.runtime.host_full_init = false;
    auto sharded = run::simulate(spec).report;
    CHECK(sharded.host_peak_bytes == doctest::Approx(4 * params * 4 / 64));
    // 128B parameters in fp32 in 4 processes: 2 TB, far beyond a 400 GB host.
    auto big = test::load_config("configs/gpt2-128b-fsdp-v4-512.yaml");
    big.runtime.framework = parallel::Framework::pytorch_xla;
    CHECK_FALSE(run::simulate(big).report.host_fits);
}

TEST_CASE("a graph that recompiles every step pays the compile time every step") {
    auto spec = test::load_config("configs/default.yaml");
    spec.runtime.compile_time = 40.0;
    auto once = run::simulate(spec).report;
    CHECK(once.compile_time_s == 40.0);
    spec.runtime.recompile_every_step = true;
    auto every = run::simulate(spec).report;
    CHECK(every.step_time_s == doctest::Approx(once.step_time_s + 40.0).epsilon(1e-6));
}

TEST_CASE("async collectives report overlapped communication; synchronous ones expose it all") {
    auto spec = test::load_config("configs/maxtext-22b-fsdp-v4-128.yaml");
    auto async = run::simulate(spec).report;
    CHECK(async.overlapped_communication_s > 0.5 * async.communication_s);
    spec.runtime.async_collectives = false;
    auto sync = run::simulate(spec).report;
    CHECK(sync.overlapped_communication_s == 0.0);
    CHECK(sync.exposed_communication_s == doctest::Approx(sync.communication_s));
}

namespace {

std::string resize_case(const std::string& model, const std::string& mesh, int global_batch,
                        const std::string& training, const std::string& runtime) {
    return fmt::format(R"(
schema: podsim.run/v1
model: {}
topology: tpu-v4
slice: 2x2x4
mesh: {}
training: {{global_batch: {}, seq_len: 1024, optimizer: adamw, dtype: bf16, param_dtype: fp32{}}}
runtime: {{{}}}
)",
                       model, mesh, global_batch, training, runtime);
}

// Every field of every op, numbers compared exactly.
void check_same_program(const parallel::DeviceProgram& a, const parallel::DeviceProgram& b) {
    REQUIRE(a.ops.size() == b.ops.size());
    for (std::size_t i = 0; i < a.ops.size(); ++i) {
        const auto& x = a.ops[i];
        const auto& y = b.ops[i];
        CAPTURE(i);
        CAPTURE(std::string(x.name));
        CHECK(x.name == y.name);
        CHECK(x.category == y.category);
        CHECK(x.phase == y.phase);
        CHECK(x.kept_for_backward == y.kept_for_backward);
        CHECK(x.offloaded == y.offloaded);
        CHECK(x.continuation == y.continuation);
        CHECK(x.layer == y.layer);
        CHECK(x.microbatch == y.microbatch);
        CHECK(x.resource == y.resource);
        CHECK(x.source_op == y.source_op);
        CHECK(x.comm_axis == y.comm_axis);
        CHECK(x.deps == y.deps);
        CHECK(x.flops == y.flops);
        CHECK(x.bytes == y.bytes);
        CHECK(x.output_bytes == y.output_bytes);
        CHECK(x.mm_batch == y.mm_batch);
        CHECK(x.mm_m == y.mm_m);
        CHECK(x.mm_n == y.mm_n);
        CHECK(x.mm_k == y.mm_k);
        CHECK(x.flop_scale == y.flop_scale);
        CHECK(x.collective_bytes == y.collective_bytes);
    }
    CHECK(a.params_bytes == b.params_bytes);
    CHECK(a.grads_bytes == b.grads_bytes);
    CHECK(a.optimizer_bytes == b.optimizer_bytes);
}

}  // namespace

TEST_CASE("a step partitioned for one batch and resized to another is the step partitioned for it") {
    // Each case exercises rules of parallel::OpSizing: compute ops, FSDP and gradient collectives
    // (fixed), tensor all-reduces of a matmul's output, sequence-parallel gathers of an input and
    // reduce-scatters that split their source's output, collective-matmul parts, offload copies.
    struct Case {
        std::string model, mesh, training, runtime;
    };
    const std::vector<Case> cases = {
        {"gpt2-small", "{fsdp: 16}", "", "framework: pytorch-xla"},
        {"gpt2-small", "{data: 2, fsdp: 8}", ", microbatches: 2, remat: full", "framework: jax"},
        {"llama3-8b", "{fsdp: 4, tensor: 4}", ", remat: full", "framework: jax"},
        {"llama3-8b", "{fsdp: 4, tensor: 4}", ", remat: full, tensor_sequence: true", "framework: jax"},
        {"llama3-8b", "{fsdp: 4, tensor: 4}", ", tensor_sequence: true, microbatches: 2",
         "framework: jax, collective_matmul: false"},
        {"llama3-8b", "{fsdp: 8, tensor: 2}", ", remat: minimal_offloaded, tensor_sequence: true",
         "framework: jax"},
    };
    for (const Case& c : cases) {
        CAPTURE(c.model);
        CAPTURE(c.mesh);
        CAPTURE(c.training);
        run::SimulationCache cache;
        // The first config partitions and keeps its step; the second resizes a copy.
        auto first = run::simulate(
            test::run_from_text(resize_case(c.model, c.mesh, 32, c.training, c.runtime)), cache);
        auto resized = run::simulate(
            test::run_from_text(resize_case(c.model, c.mesh, 96, c.training, c.runtime)), cache);
        run::SimulationCache own;
        auto fresh =
            run::simulate(test::run_from_text(resize_case(c.model, c.mesh, 96, c.training, c.runtime)), own,
                          run::SimulateOptions{.exact = true});
        check_same_program(resized.program, fresh.program);
        // The scheduler's dependencies, kept with the partitioned step, do not change with the batch.
        const auto runtime =
            test::run_from_text(resize_case(c.model, c.mesh, 96, c.training, c.runtime)).runtime;
        const auto kept = scheduler::dependencies(first.program, runtime);
        const auto built = scheduler::dependencies(fresh.program, runtime);
        CHECK(kept.pending == built.pending);
        CHECK(kept.succ_begin == built.succ_begin);
        CHECK(kept.successors == built.successors);
        CHECK(kept.pred_begin == built.pred_begin);
        CHECK(kept.preds == built.preds);
        // The test can fail: the batch changes the sizes.
        double bytes_first = 0.0, bytes_resized = 0.0;
        for (const auto& op : first.program.ops) bytes_first += op.bytes;
        for (const auto& op : resized.program.ops) bytes_resized += op.bytes;
        CHECK(bytes_resized > 2.0 * bytes_first);
    }
}

TEST_CASE("a network plan kept with a resized step is the one planned afresh for its batch") {
    // run::plan_network takes which ops share which collective plan from the previous config of the
    // same partitioned step, and plans again only the collectives whose bytes changed: FSDP gathers
    // and gradient collectives keep their bytes, tensor all-reduces and sequence-parallel gathers
    // scale with the batch.
    struct Case {
        std::string model, mesh, training;
    };
    const std::vector<Case> cases = {
        {"gpt2-small", "{fsdp: 16}", ""},
        {"llama3-8b", "{fsdp: 4, tensor: 4}", ", remat: full"},
        {"llama3-8b", "{fsdp: 4, tensor: 4}", ", tensor_sequence: true, microbatches: 2"},
    };
    int replanned = 0;
    for (const Case& c : cases) {
        CAPTURE(c.model);
        CAPTURE(c.mesh);
        CAPTURE(c.training);
        run::SimulationCache cache;
        std::vector<double> first_bytes;
        for (const int batch : {32, 96, 64, 96, 32}) {
            CAPTURE(batch);
            const auto spec =
                test::run_from_text(resize_case(c.model, c.mesh, batch, c.training, "framework: jax"));
            const auto kept = run::simulate(spec, cache);
            run::SimulationCache own;
            const auto fresh = run::simulate(spec, own);
            CHECK(kept.plan_of_op == fresh.plan_of_op);
            REQUIRE(kept.plans.size() == fresh.plans.size());
            std::vector<double> bytes;
            for (std::size_t p = 0; p < kept.plans.size(); ++p) {
                CHECK(kept.plans[p]->plan.kind == fresh.plans[p]->plan.kind);
                CHECK(kept.plans[p]->plan.bytes == fresh.plans[p]->plan.bytes);
                CHECK(kept.plans[p]->plan.links == fresh.plans[p]->plan.links);
                CHECK(kept.plans[p]->alone.duration == fresh.plans[p]->alone.duration);
                bytes.push_back(kept.plans[p]->plan.bytes);
            }
            REQUIRE(kept.timeline.spans.size() == fresh.timeline.spans.size());
            for (std::size_t i = 0; i < kept.timeline.spans.size(); ++i) {
                CHECK(kept.timeline.spans[i].start == fresh.timeline.spans[i].start);
                CHECK(kept.timeline.spans[i].end == fresh.timeline.spans[i].end);
            }
            CHECK(kept.report.step_time_s == fresh.report.step_time_s);
            CHECK(kept.report.events == fresh.report.events);
            if (first_bytes.empty())
                first_bytes = bytes;
            else if (bytes != first_bytes)
                ++replanned;
        }
    }
    // The test can fail: some plans' bytes change with the batch.
    CHECK(replanned > 0);
}

TEST_CASE("parallelism kinds are data: divisors, names and explain come from their declarations") {
    network::MeshSpec mesh;
    mesh.ici = {{"data", 2}, {"fsdp", 4}, {"tensor", 8}};
    mesh.dcn = {{"data", 3}};
    // The batch splits over data (ICI and DCN) and fsdp, heads and MLP width over tensor, parameters
    // over fsdp and tensor (a block) or fsdp alone (a group not sharded along tensor).
    CHECK(parallel::divisor(mesh, workload::Shard::batch) == 2 * 3 * 4);
    CHECK(parallel::divisor(mesh, workload::Shard::tensor) == 8);
    CHECK(parallel::divisor(mesh, workload::Shard::param) == 4 * 8);
    CHECK(parallel::divisor(mesh, workload::Shard::none) == 1);
    workload::ParamGroup block{"layer0", 0, 100, true, {}}, head{"head", -1, 100, false, {}};
    CHECK(parallel::param_split(mesh).divisor(block) == 32);
    CHECK(parallel::param_split(mesh).divisor(head) == 4);
    CHECK(parallel::split_by_text(workload::Shard::batch) == "data x fsdp x expert");
    const std::string explained = parallel::explain_parallelism();
    for (const auto& kind : parallel::kParallelisms) {
        CHECK(parallel::parallelism_named(kind.name) == &kind);
        bool dcn = true;
        CHECK(parallel::parallelism_of_maxtext_key(kind.maxtext_ici, &dcn) == &kind);
        CHECK(!dcn);
        CHECK(explained.find(kind.maxtext_ici) != std::string::npos);
        CHECK(explained.find(kind.collectives_text) != std::string::npos);
    }
    // Each collective rule belongs to exactly one kind.
    for (auto rule :
         {parallel::CollectiveRule::all_reduce_gradients, parallel::CollectiveRule::gather_parameters,
          parallel::CollectiveRule::reduce_partial_sums, parallel::CollectiveRule::pass_activations}) {
        int kinds = 0;
        for (const auto& kind : parallel::kParallelisms) kinds += parallel::inserts(kind, rule) ? 1 : 0;
        CHECK(kinds == 1);
    }
}
