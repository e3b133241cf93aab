#include <doctest/doctest.h>

#include <cmath>
#include <string>
#include <string_view>

#include <fmt/format.h>

#include "run/simulate.hpp"
#include "support.hpp"
#include "workload/model_spec.hpp"
#include "workload/training_keys.hpp"

// Mixture of experts (MaxText layers/moe.py) and expert parallelism. The small model below has 8
// experts of 2 x 1024 x 4096 (SwiGLU, three matrices) and routes each token to 2 of them.

using namespace podsim;

namespace {

constexpr double kD = 1024, kFf = 4096, kE = 8, kSeq = 2048;

std::string moe_model(const std::string& extra = "") {
    return fmt::format(
        R"({{schema: podsim.model/v1, name: small-moe, family: decoder, layers: 4, d_model: 1024,
  heads: 8, d_ff: 4096, activation: swiglu, vocab: 256, tied_embeddings: false, bias: false,
  num_experts: 8, num_experts_per_tok: 2{}}})",
        extra);
}

run::Simulation moe_run(const std::string& mesh, const std::string& training,
                        const std::string& model_extra = "", const std::string& remat = "full") {
    return run::simulate(test::run_from_text(fmt::format(R"(
schema: podsim.run/v1
model: {}
topology: tpu-v4
slice: 2x2x2
mesh: {}
training: {{global_batch: 8, seq_len: 2048, optimizer: adamw, remat: {}, attention: flash{}}}
)",
                                                         moe_model(model_extra), mesh, remat, training)));
}

// The small MoE model as a run config parses it (on 8 chips, FSDP 8).
workload::ModelSpec moe_model_spec(const std::string& extra = "") {
    return test::run_from_text(fmt::format(R"(
schema: podsim.run/v1
model: {}
topology: tpu-v4
slice: 2x2x2
mesh: {{fsdp: 8}}
training: {{global_batch: 8, seq_len: 2048}}
)",
                                           moe_model(extra)))
        .model;
}

int count_category(const run::Simulation& sim, parallel::OpCategory category) {
    int n = 0;
    for (const auto& op : sim.program.ops) n += op.category == category;
    return n;
}

// FLOPs per chip of the forward ops whose name ends in `suffix` (one per MoE layer).
double forward_flops(const run::Simulation& sim, const std::string& suffix) {
    double flops = 0;
    int n = 0;
    for (const auto& op : sim.program.ops) {
        const std::string_view name = op.name;
        if (op.phase != workload::Phase::forward || name.size() < suffix.size() ||
            name.substr(name.size() - suffix.size()) != suffix)
            continue;
        flops += op.flops;
        ++n;
    }
    return n > 0 ? flops / n : 0.0;
}

}  // namespace

TEST_CASE("Mixtral-8x7B's parameters: 46.7B in all, 12.9B through each token") {
    // Hugging Face's mistralai/Mixtral-8x7B-v0.1 num_parameters(): 46,702,792,704. By hand: embedding
    // and untied head 2 x 32000 x 4096 (+ the final norm 4096); per layer attention 2 x 4096^2 +
    // 2 x 4096 x 1024, norms 2 x 4096, router 4096 x 8, experts 8 x 3 x 4096 x 14336.
    workload::ModelSpec m = test::run_from_text(R"(
schema: podsim.run/v1
model: {schema: podsim.model/v1, name: mixtral, family: decoder, layers: 32, d_model: 4096, heads: 32,
  head_dim: 128, kv_heads: 8, d_ff: 14336, activation: swiglu, vocab: 32000, tied_embeddings: false,
  bias: false, num_experts: 8, num_experts_per_tok: 2}
topology: tpu-v4
slice: 2x2x1
mesh: {fsdp: 4}
training: {global_batch: 4, seq_len: 4096}
)")
                                .model;
    const auto c = workload::count_params(m);
    const std::int64_t expert = 3LL * 4096 * 14336;
    CHECK(c.routed_experts_per_moe_layer == 8 * expert);
    CHECK(c.total == 46'702'792'704LL);
    // Active: 6 of the 8 experts of each of the 32 layers left out (MaxText's MFU convention).
    CHECK(c.active == c.total - 6 * expert * 32);
    CHECK(c.active == 12'879'925'248LL);
}

TEST_CASE("MFU counts the activated experts; HFU what runs, capacity padding included") {
    const auto sim = moe_run("{fsdp: 8}", ", capacity_factor: 1.25, sparse_matmul: false");
    const auto m = moe_model_spec();
    const double tokens = 8 * kSeq;
    CHECK(sim.report.model_flops_per_step ==
          doctest::Approx(6.0 * static_cast<double>(workload::count_params(m).active) * tokens));
    // Dropping: capacity int(ceil(2048 x 2 / 8) x 1.25) = 640 slots per expert and sequence; the up
    // projection runs on all E x 640 slots of the chip's one sequence: 2 x 8 x 640 x 1024 x 8192.
    CHECK(forward_flops(sim, "expert_up") == doctest::Approx(2.0 * kE * 640 * kD * 2 * kFf));
    // The routed tokens are 2048 x 2 per sequence, 1.25x fewer than the slots: HFU above MFU by more
    // than the remat's recompute alone.
    CHECK(sim.report.hfu > sim.report.mfu);
    const auto more = moe_run("{fsdp: 8}", ", capacity_factor: 2.5, sparse_matmul: false");
    CHECK(more.report.mfu ==
          doctest::Approx(sim.report.mfu * sim.report.step_time_s / more.report.step_time_s));
    CHECK(more.report.hardware_flops_per_step > sim.report.hardware_flops_per_step);
}

TEST_CASE("MFU leaves out the expert visits a capacity below the routed tokens drops") {
    const auto m = moe_model_spec();
    const double tokens = 8 * kSeq;
    const double active = static_cast<double>(workload::count_params(m).active);
    // Each expert's parameters: up (2 x 1024 x 4096, gated) and down (4096 x 1024).
    const double expert = 3 * kD * kFf;
    // capacity_factor 0.25: int(ceil(2048 x 2 / 8) x 0.25) = 128 slots per expert and sequence, 8 x
    // 128 = 1024 of the 4096 visits a sequence's tokens make: three quarters of the routed experts'
    // FLOPs (k = 2 of them per token, 4 MoE layers) are not done.
    const auto dropping = moe_run("{fsdp: 8}", ", capacity_factor: 0.25, sparse_matmul: false");
    CHECK(dropping.report.model_flops_per_step ==
          doctest::Approx(6.0 * tokens * (active - 0.75 * 2 * expert * 4)));
    CHECK(dropping.report.mfu < dropping.report.hfu);
    // At 1 the slots take every visit: MaxText's count, every token's k experts.
    const auto even = moe_run("{fsdp: 8}", ", capacity_factor: 1, sparse_matmul: false");
    CHECK(even.report.model_flops_per_step == doctest::Approx(6.0 * active * tokens));
}

TEST_CASE("every layer MoE with its own expert width: d_ff need not divide by the tensor axis") {
    // No layer runs a d_ff-wide MLP: base_moe_mlp_dim is what the tensor axis splits.
    auto spec = [](int d_ff, const std::string& expert_width) -> run::RunSpec {
        return test::run_from_text(fmt::format(R"(
schema: podsim.run/v1
model: {{schema: podsim.model/v1, name: all-moe, family: decoder, layers: 4, d_model: 1024, heads: 8,
        d_ff: {}, activation: swiglu, vocab: 256, num_experts: 8, num_experts_per_tok: 2{}}}
topology: tpu-v4
slice: 2x2x2
mesh: {{tensor: 8}}
training: {{global_batch: 8, seq_len: 2048}}
)",
                                               d_ff, expert_width));
    };
    CHECK(run::semantic_errors(spec(1001, ", base_moe_mlp_dim: 4096")).empty());
    // Without base_moe_mlp_dim the experts are d_ff wide, and d_ff must divide: said once.
    std::string errors;
    try {
        (void)spec(1001, "");
    } catch (const core::UserError& e) {
        errors = e.diagnostics().to_string();
    }
    CHECK(errors ==
          "<test>:7:7: error: mesh.tensor: each expert's MLP width, model.base_moe_mlp_dim (1001; model.d_ff "
          "when it is not given), is not divisible by the tensor axis (8)\n");
}

TEST_CASE("dropless grouped matmul: token rows in tiles, one tile more per group boundary") {
    // megablox gmm (jax make_group_metadata): 2048 x 2 rows in tiles of 512, and 8 - 1 tiles more
    // where a group starts inside a tile: (8 + 7) x 512 rows.
    const auto sim = moe_run("{fsdp: 8}", ", sparse_matmul: true, megablox: true, tile_batch_seq: 512");
    CHECK(forward_flops(sim, "expert_up") == doctest::Approx(2.0 * (8 + 7) * 512 * kD * 2 * kFf));
    const auto whole = moe_run("{fsdp: 8}", ", sparse_matmul: true, tile_batch_seq: 4096");
    CHECK(forward_flops(whole, "expert_up") == doctest::Approx(2.0 * (1 + 7) * 4096 * kD * 2 * kFf));
}

TEST_CASE("expert parallelism 1: experts are FSDP-sharded weights, no all-to-all") {
    for (const char* training : {", sparse_matmul: true", ", capacity_factor: 1.25, sparse_matmul: false"}) {
        CAPTURE(training);
        const auto sim = moe_run("{fsdp: 8}", training);
        CHECK(count_category(sim, parallel::OpCategory::all_to_all) == 0);
        CHECK(count_category(sim, parallel::OpCategory::all_gather) > 0);
    }
}

TEST_CASE("expert parallelism 4: all-to-alls on the expert axis, experts split four ways") {
    for (const char* training : {", sparse_matmul: true", ", capacity_factor: 1.25, sparse_matmul: false"}) {
        CAPTURE(training);
        const auto ep = moe_run("{fsdp: 2, expert: 4}", training);
        const auto fsdp = moe_run("{fsdp: 8}", training);
        // Forward: dispatch and combine per MoE layer; backward their transposes; remat full runs
        // the forward's once more.
        const int layers = 4;
        CHECK(count_category(ep, parallel::OpCategory::all_to_all) == layers * 2 * 3);
        for (const auto& op : ep.program.ops) {
            if (op.category != parallel::OpCategory::all_to_all) continue;
            CHECK(ep.program.comm_axes[static_cast<std::size_t>(op.comm_axis)].name == "expert");
        }
        // Per chip the routed experts' parameters are split over fsdp x expert (8) either way, the rest
        // over fsdp only with the expert axis: more bytes per chip, but the experts' share the same.
        CHECK(ep.report.memory.params_bytes > fsdp.report.memory.params_bytes);
        if (std::string_view(training).find("capacity") != std::string_view::npos) {
            // Dropping: 2 experts x 640 slots x 4 sequences per chip, as many slots as 8 x 640 x 1.
            CHECK(forward_flops(ep, "expert_up") == doctest::Approx(forward_flops(fsdp, "expert_up")));
        } else {
            // Dropless: the chip's 4096 rows in tiles of 512 and one tile more per boundary between
            // its 2 experts' groups, against 7 more between 8 groups without the expert axis.
            CHECK(forward_flops(ep, "expert_up") == doctest::Approx(2.0 * (8 + 1) * 512 * kD * 2 * kFf));
            CHECK(forward_flops(fsdp, "expert_up") == doctest::Approx(2.0 * (8 + 7) * 512 * kD * 2 * kFf));
        }
    }
}

TEST_CASE("MoE every second layer: dense MLPs between, parameters as counted") {
    const auto m = moe_model_spec(", interleave_moe_layer_step: 2, shared_experts: 1");
    CHECK(m.moe_layers() == 2);
    CHECK(!m.is_moe_layer(0));
    CHECK(m.is_moe_layer(1));
    const auto c = workload::count_params(m);
    const std::int64_t expert = 3LL * 1024 * 4096;
    // An MoE layer in place of a dense one: router, 8 routed and 1 shared expert for one MLP.
    CHECK(c.per_moe_layer - c.per_layer == 1024 * 8 + 8 * expert);
    const auto sim =
        moe_run("{fsdp: 8}", ", sparse_matmul: true", ", interleave_moe_layer_step: 2, shared_experts: 1");
    int dense_mlps = 0, routers = 0;
    for (const auto& op : sim.program.ops) {
        if (op.phase != workload::Phase::forward) continue;
        const std::string_view name = op.name;
        dense_mlps += name.ends_with(".mlp_up");
        routers += name.ends_with(".gate");
    }
    CHECK(dense_mlps == 2);
    CHECK(routers == 2);
}

TEST_CASE("memory under every remat policy: a result each, none saving less than full") {
    for (const char* experts : {", sparse_matmul: true", ", capacity_factor: 1.25, sparse_matmul: false"}) {
        const auto full = moe_run("{fsdp: 2, expert: 4}", experts);
        for (const auto remat : workload::kRematNames) {
            CAPTURE(remat);
            CAPTURE(experts);
            const auto sim = moe_run("{fsdp: 2, expert: 4}", experts, "", std::string(remat));
            CHECK(sim.report.memory.peak_bytes > sim.report.memory.params_bytes);
            CHECK(sim.report.memory.activations_bytes >= full.report.memory.activations_bytes * (1 - 1e-9));
        }
    }
}

TEST_CASE("an all-to-all carries the whole array over the expert axis") {
    // Dropping, fsdp 2 x expert 4: a chip's dispatched slots are its 2 experts x 640 x 4 sequences
    // of d = 1024 in bf16; the array over the 4 chips of the axis is 4 times that (the scaling
    // book's convention, as for the gathers).
    const auto sim = moe_run("{fsdp: 2, expert: 4}", ", capacity_factor: 1.25, sparse_matmul: false");
    int checked = 0;
    for (const auto& op : sim.program.ops) {
        if (op.category != parallel::OpCategory::all_to_all) continue;
        CHECK(op.collective_bytes == doctest::Approx(4.0 * 2 * 640 * 4 * kD * 2));
        ++checked;
    }
    CHECK(checked > 0);
}

TEST_CASE("remat custom: MaxText's decoder_layer_input offloaded to host memory") {
    const auto full = moe_run("{fsdp: 8}", ", sparse_matmul: true");
    const auto custom =
        moe_run("{fsdp: 8}", ", sparse_matmul: true, decoder_layer_input: offload", "", "custom");
    // Everything else recomputed, as full does; the layer inputs go to the host and come back.
    CHECK(custom.report.hardware_flops_per_step == doctest::Approx(full.report.hardware_flops_per_step));
    // Each of the 4 layers' inputs: a copy to the host after it is made and one back before its
    // backward.
    CHECK(count_category(custom, parallel::OpCategory::copy) == 2 * 4);
    CHECK(count_category(full, parallel::OpCategory::copy) == 0);
    CHECK(custom.report.memory.peak_bytes <= full.report.memory.peak_bytes);
    // At its defaults (decoder_layer_input: device, every name remat) custom is full.
    const auto same = moe_run("{fsdp: 8}", ", sparse_matmul: true", "", "custom");
    CHECK(same.report.step_time_s == doctest::Approx(full.report.step_time_s));
    CHECK(same.report.memory.peak_bytes == doctest::Approx(full.report.memory.peak_bytes));
}

namespace {

// Saved bytes per chip of the op named `name` (a kept forward op, or a recompute copy).
double saved_of(const run::Simulation& sim, std::string_view name) {
    for (const auto& op : sim.program.ops)
        if (op.name == name) return op.saved_bytes;
    FAIL("no op " << name);
    return 0.0;
}

}  // namespace

TEST_CASE("MoE residuals per remat policy, counted by hand from the shapes") {
    // Dropping (capacity 640), fsdp 8: one sequence of S = 2048 tokens per chip, all E = 8 experts
    // on every chip, bf16 weights (no compute-dtype casts among the residuals).
    const std::string experts =
        ", capacity_factor: 1.25, sparse_matmul: false, dtype: bf16, param_dtype: bf16";
    constexpr double kBf16 = 2, kFp32 = 4, kCapacity = 640, kSlots = kE * kCapacity;  // 5120 slots
    // The routing's residuals: its fp32 softmax probabilities [S, E] and row statistics (max and
    // sum, [S] each), its output, the combine mask [S, E x C] in bf16, which the dispatch and combine
    // backwards read, and what the masks' gradients read: the capacity-slot one-hot in bf16
    // [S, E x (C + 1)], the kept-expert mask in bf16 [S, E], the dispatch mask as pred [S, E x C].
    const double probabilities = kSeq * kE * kFp32 + 2 * kSeq * kFp32;             // 80 KiB
    const double mask = kSeq * kSlots * kBf16 +                                    // 20 MiB
                        kSeq * kE * (kCapacity + 1) * kBf16 + kSeq * kE * kBf16 +  // 20 MiB
                        kSeq * kSlots;                                             // 10 MiB
    // The tokens at the experts [E, C, d] (the dispatch all-to-all's output, counted with its
    // producer, the dispatch), read by the up projection's weight gradient; and the expert outputs
    // [E x C, d] after the combine all-to-all (counted with expert_down), read by the combine's
    // gradient for its mask operand.
    const double tokens_at_experts = kSlots * kD * kBf16;  // 10 MiB
    // One [E, C, ff] tensor in bf16: a dot output (g or u) of the SwiGLU up projection, or its
    // product silu(g)·u, the down projection's operand.
    const double expert_rows = kSlots * kFf * kBf16;  // 40 MiB

    SUBCASE("none: every forward op keeps what JAX's rules name, for every layer") {
        const auto sim = moe_run("{fsdp: 8}", experts, "", "none");
        CHECK(saved_of(sim, "layer1.gate") == 0.0);  // its backward reads its input (norm2's) only
        CHECK(saved_of(sim, "layer1.routing") == probabilities + mask);
        CHECK(saved_of(sim, "layer1.dispatch") == tokens_at_experts);
        // SwiGLU silu(g)·u: g, σ(g), σ(g)(1-σ(g)), silu(g), u (jax.nn.silu, logistic_p's JVP) and
        // the product, each [E, C, ff].
        CHECK(saved_of(sim, "layer1.expert_up") == 6 * expert_rows);
        CHECK(saved_of(sim, "layer1.expert_down") == tokens_at_experts);
        CHECK(saved_of(sim, "layer1.combine") == 0.0);
    }
    SUBCASE("full: the layer input alone until the backward; the recompute keeps dot outputs") {
        const auto sim = moe_run("{fsdp: 8}", experts, "", "full");
        // Kept through the step: each layer's output (the next one's input), [S, d] in bf16.
        double kept = 0.0;
        for (const auto& op : sim.program.ops)
            if (op.kept_for_backward && op.layer >= 0) kept += op.saved_bytes;
        CHECK(kept == 4 * kSeq * kD * kBf16);
        // Recomputed before the layer's backward, each held until its own backward: the routing as
        // above; the up projection keeps only its dot outputs g and u and the product, since XLA
        // fuses the activation's internals into its backward (residuals.hpp, rebuilt_activation).
        CHECK(saved_of(sim, "layer1.routing.remat") == probabilities + mask);
        CHECK(saved_of(sim, "layer1.dispatch.remat") == tokens_at_experts);
        CHECK(saved_of(sim, "layer1.expert_up.remat") == 3 * expert_rows);
        CHECK(saved_of(sim, "layer1.expert_down.remat") == tokens_at_experts);
    }
    SUBCASE("minimal: the dots without batch dimensions are saved: the gate, not the experts") {
        const auto sim = moe_run("{fsdp: 8}", experts, "", "minimal");
        // checkpoint_dots_with_no_batch_dims (jax/_src/ad_checkpoint.py) saves the gate's logits
        // [S, E]; the experts' einsums are batched over E (EBCM,EMH -> EBCH), so they are recomputed
        // as under full (the residual tuple of the XLA fixture moe-b8-minimal-flash has no [E, C, ff]).
        CHECK(saved_of(sim, "layer1.gate") == kSeq * kE * kBf16);
        CHECK(saved_of(sim, "layer1.expert_up") == 0.0);
        CHECK(saved_of(sim, "layer1.expert_up.remat") == 3 * expert_rows);
        CHECK(saved_of(sim, "layer1.expert_down.remat") == tokens_at_experts);
    }
    SUBCASE("save_dot_except_mlpwi: the experts' named output (mlpwo) is saved, as it arrives") {
        const auto sim = moe_run("{fsdp: 8}", experts, "", "save_dot_except_mlpwi");
        // The combine's mask gradient reads the expert outputs: kept by name, counted with their
        // producer as the combine all-to-all delivers them (the fixture moe-b8-exceptwi-flash).
        CHECK(saved_of(sim, "layer1.expert_down") == tokens_at_experts);
        CHECK(saved_of(sim, "layer1.expert_up") == 0.0);
    }
}
