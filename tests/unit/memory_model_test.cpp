#include <doctest/doctest.h>

#include "support.hpp"

#include <filesystem>
#include <numeric>

#include "hlo/read_module.hpp"
#include "parallel/xla_gpu_split_k.hpp"

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
    spec.topology.chip.hbm_bytes_limit = 0.0;  // the verdict's limit is the capacity set below
    spec.topology.chip.hbm_capacity = 1e15;    // no limit
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

TEST_CASE("offloaded residuals are reported as host memory, not in the HBM peak") {
    // The 1B step of the XLA fixtures (tests/validation/xla): qkv_proj_offloaded keeps q, k and v of
    // each of the 16 layers in pinned host memory, 3 x 8 x 2048 x 2048 bf16 values a layer: 3 GiB, as
    // XLA's host_temp_size_in_bytes says for the same step.
    auto spec = test::load_config("tests/validation/xla/xla-1b-b8-full-flash.yaml");
    const auto full = run::simulate(spec);
    spec.training.remat = workload::Remat::save_qkv_proj;
    const auto saved = run::simulate(spec);
    spec.training.remat = workload::Remat::qkv_proj_offloaded;
    const auto offloaded = run::simulate(spec);
    const double qkv_per_layer = 3.0 * 8 * 2048 * 2048 * 2;
    CHECK(offloaded.report.memory.host_offload_bytes == doctest::Approx(16 * qkv_per_layer));
    CHECK(saved.report.memory.host_offload_bytes == 0.0);
    CHECK(full.report.memory.host_offload_bytes == 0.0);
    // In HBM the step is full remat's but for the q, k, v of the layers being reloaded (one layer
    // ahead of the backward): at most two layers' worth over full's, far below keeping them all.
    CHECK(offloaded.memory.peak_bytes <= full.memory.peak_bytes + 2 * qkv_per_layer);
    CHECK(offloaded.memory.peak_bytes < saved.memory.peak_bytes - 12 * qkv_per_layer);
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
    forward.saved_bytes = 100.0;
    forward.output_saved = true;
    add(forward, 0, 10);
    parallel::DeviceOp backward = forward;
    backward.phase = workload::Phase::backward;
    backward.kept_for_backward = false;
    backward.output_saved = false;
    backward.saved_bytes = 0.0;
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

namespace {

// A forward of `layers` layers and its backward on one TensorCore, every op 1 us: each layer's
// output (8 bytes) is kept until its backward op ends; the layers between the first and the last
// also make a 100-byte temporary first, freed when the next op ends. So the live bytes climb by 8 a
// layer, and the highest point is in the last middle layer (the last layer has no temporary).
struct Layers {
    parallel::DeviceProgram program;
    scheduler::Timeline timeline;
    std::vector<std::size_t> forward_start, backward_start;  // first op of each layer's pass
};

Layers synthetic_layers(int layers) {
    Layers out;
    out.program.resources.push_back({"compute", parallel::ResourceKind::compute, -1});
    out.program.params_bytes = 1000.0;
    const core::Time op_time = 1000000;
    auto add = [&](int layer, workload::Phase phase, double bytes, bool kept) {
        parallel::DeviceOp op;
        op.category = parallel::OpCategory::fusion;
        op.phase = phase;
        op.layer = layer;
        op.output_bytes = bytes;
        op.kept_for_backward = kept;
        op.saved_bytes = kept ? bytes : 0.0;
        op.output_saved = kept;
        const auto i = static_cast<int>(out.program.ops.size());
        out.program.ops.push_back(op);
        out.timeline.spans.push_back({i, 0, i * op_time, (i + 1) * op_time});
    };
    out.forward_start.resize(static_cast<std::size_t>(layers));
    out.backward_start.resize(static_cast<std::size_t>(layers));
    for (int l = 0; l < layers; ++l) {
        out.forward_start[static_cast<std::size_t>(l)] = out.program.ops.size();
        if (l > 0 && l < layers - 1) add(l, workload::Phase::forward, 100.0, false);
        add(l, workload::Phase::forward, 8.0, true);
    }
    for (int l = layers - 1; l >= 0; --l) {
        out.backward_start[static_cast<std::size_t>(l)] = out.program.ops.size();
        add(l, workload::Phase::backward, 0.0, false);
    }
    out.timeline.step_time = static_cast<core::Time>(out.program.ops.size()) * op_time;
    return out;
}

}  // namespace

TEST_CASE("a folded memory profile is the whole model's: periods spliced in with their drift") {
    // 40 layers against 12 layers with 28 copies of a middle layer spliced into the forward (2 ops,
    // +8 bytes each) and of a middle layer's backward (1 op, -8 bytes each).
    const int whole_layers = 40, cut_layers = 12;
    const Layers whole = synthetic_layers(whole_layers);
    const Layers cut = synthetic_layers(cut_layers);
    const auto full = memory::profile_memory(whole.program, whole.timeline, 1e9);
    // The peak: 1000 params + 39 kept outputs (layers 0 to 38) + layer 38's temporary = 1412 bytes,
    // when layer 38's kept output is made (op 1 + 37 x 2 + 1 = 76, at 76 us).
    CHECK(full.peak_bytes == 1000.0 + 39 * 8.0 + 100.0);
    CHECK(full.peak_time == 76 * 1000000);
    CHECK(whole.program.ops[static_cast<std::size_t>(full.peak_op)].layer == 38);
    const auto start = [&](std::size_t op) { return cut.timeline.spans[op].start; };
    const auto copies = static_cast<std::size_t>(whole_layers - cut_layers);
    const std::size_t backward_at = cut.backward_start[5];
    const scheduler::Splice backward{start(backward_at),
                                     start(backward_at) - start(cut.backward_start[6]),
                                     copies,
                                     cut.backward_start[6],
                                     backward_at,
                                     1};
    // Splicing the forward's copies in before layer 6 (the peak is then the cut model's own layer
    // 10, moved 28 layers on) or before the last layer 11 (the peak is in the last copy of layer 10).
    for (int before_layer : {6, 11}) {
        CAPTURE(before_layer);
        const std::size_t at = cut.forward_start[static_cast<std::size_t>(before_layer)];
        const std::size_t template_op = cut.forward_start[static_cast<std::size_t>(before_layer - 1)];
        const std::vector<scheduler::Splice> splices{
            {start(at), start(at) - start(template_op), copies, template_op, at, 2}, backward};
        const memory::MemoryFold fold{splices, 1000.0, 0.0, 0.0};
        memory::FoldedPeak where;
        const auto folded = memory::profile_memory(cut.program, cut.timeline, 1e9, &fold, &where);
        CHECK(folded.peak_bytes == full.peak_bytes);
        CHECK(folded.peak_time == full.peak_time);
        CHECK(folded.at_peak.params == full.at_peak.params);
        CHECK(folded.at_peak.activations == full.at_peak.activations);
        CHECK(folded.at_peak.temporaries == full.at_peak.temporaries);
        CHECK(cut.program.ops[static_cast<std::size_t>(folded.peak_op)].layer == 10);
        CHECK(where.splice == 0);
        CHECK(where.copy == (before_layer == 6 ? 0 : copies));
    }
}

TEST_CASE("grouped-query dot attention without remat copies its probabilities' stacks between the loops") {
    // docs/model.md, "Grouped-query probabilities change layout between the loops": one op after the
    // forward layers holds a copy of the fp32 stack, [L, B, H, S, S] per device, while it runs.
    auto spec = test::load_config("configs/llama3-8b-fsdp-tp-v4-128.yaml");  // 32 heads, 8 key/value
    spec.training.attention = workload::Attention::dot_product;
    spec.training.remat = workload::Remat::none;
    auto relayouts = [](const run::Simulation& sim) {
        std::vector<const parallel::DeviceOp*> found;
        for (const auto& op : sim.program.ops)
            if (op.name == "attention_relayout") found.push_back(&op);
        return found;
    };
    const auto sim = run::simulate(spec);
    const auto ops = relayouts(sim);
    REQUIRE(ops.size() == 1);
    const double samples = static_cast<double>(spec.training.global_batch) /
                           static_cast<double>(spec.mesh.size_of("data") * spec.mesh.size_of("fsdp"));
    const double heads =
        static_cast<double>(spec.model.heads) / static_cast<double>(spec.mesh.size_of("tensor"));
    const double S = spec.training.seq_len;
    const double fp32_stack = spec.model.layers * samples * heads * S * S * 4.0;
    CHECK(ops[0]->output_bytes == doctest::Approx(fp32_stack));
    CHECK(ops[0]->bytes ==
          doctest::Approx(2.0 * (fp32_stack + fp32_stack / 2.0)));  // both stacks, read and written

    // None with remat (the softmax is recomputed), flash attention, or multi-head attention.
    auto full = spec;
    full.training.remat = workload::Remat::full;
    CHECK(relayouts(run::simulate(full)).empty());
    auto flash = spec;
    flash.training.attention = workload::Attention::flash;
    CHECK(relayouts(run::simulate(flash)).empty());
    auto multi_head = spec;
    multi_head.model.kv_heads = multi_head.model.heads;
    CHECK(relayouts(run::simulate(multi_head)).empty());
    // A pipeline's stages scan their own layers: no copy of every layer's stack.
    auto pipelined = test::load_config("configs/llama3-8b-pipeline-v4-128.yaml");
    pipelined.training.attention = workload::Attention::dot_product;
    pipelined.training.remat = workload::Remat::none;
    CHECK(relayouts(run::simulate(pipelined)).empty());
}

TEST_CASE("an untied output layer's gradient is its matmul's output in a JAX step of one microbatch") {
    // docs/model.md, "Temporaries and gradients": no gradient buffer of its own for the head group
    // of an untied model under JAX with one microbatch; the embedding (a scatter into an fp32 table)
    // and the layers (the backward loop's accumulators) keep theirs.
    auto spec = test::load_config("configs/llama3-8b-fsdp-tp-v4-128.yaml");  // untied, JAX
    REQUIRE_FALSE(spec.model.tied_embeddings);
    auto in_dot_output = [](const run::RunSpec& s) {
        const auto sim = run::simulate(s);
        const auto& groups = sim.graph->param_groups;
        REQUIRE(sim.program.group_grad_in_dot_output.size() == groups.size());
        std::vector<std::string> names;
        for (std::size_t g = 0; g < groups.size(); ++g)
            if (sim.program.group_grad_in_dot_output[g]) names.push_back(groups[g].name);
        return names;
    };
    CHECK(in_dot_output(spec) == std::vector<std::string>{"head"});
    auto accumulated = spec;
    accumulated.training.microbatches = 2;
    CHECK(in_dot_output(accumulated).empty());
    auto tied = spec;
    tied.model.tied_embeddings = true;
    CHECK(in_dot_output(tied).empty());
    auto pytorch = spec;
    pytorch.runtime.framework = parallel::Framework::pytorch_xla;
    CHECK(in_dot_output(pytorch).empty());
}

TEST_CASE("a tied token table's gradient starts when the output layer's weight-gradient matmul ends") {
    // docs/model.md, "Temporaries and gradients": in the tied fixtures XLA casts that matmul's bf16
    // output to fp32 after it (gemmat-kv1-b4-full-flash: custom-call.7, then wrapped_convert.2), and
    // the input embedding's scatter-add adds into that buffer after the backward loop. So the fp32
    // table is not there while the matmul runs, the step's peak here (JAX, one microbatch).
    const auto spec = test::load_config("tests/validation/xla/xla-gemmat-kv1-b4-full-flash.yaml");
    REQUIRE(spec.model.tied_embeddings);
    const double table_grad = static_cast<double>(spec.model.vocab) * spec.model.d_model * 4.0;  // fp32
    auto peak_of = [](const run::RunSpec& s) {
        const auto sim = run::simulate(s);
        const auto& memory = sim.report.memory;
        return std::tuple{memory.peak_op, memory.grads_bytes, sim.program.grads_bytes};
    };
    const auto [op, grads, all_grads] = peak_of(spec);
    CHECK(op == "lm_head.wgrad");
    CHECK(grads == 0.0);
    CHECK(all_grads > table_grad);  // the layers' too, after this matmul
    // Two microbatches: every accumulator, the table's too, is a loop carry there from the start.
    auto accumulated = spec;
    accumulated.training.microbatches = 2;
    accumulated.training.global_batch *= 2;
    const auto [accumulated_op, accumulated_grads, accumulated_all] = peak_of(accumulated);
    CHECK(accumulated_op == "lm_head.wgrad");
    CHECK(accumulated_grads == doctest::Approx(accumulated_all));
}

TEST_CASE("XLA:GPU's split-K rewrite splits the dots its modules split, and only on a GPU") {
    // The factors the rewriter's cost model picks (xla_gpu_split_k.hpp) for dots of
    // tests/data/xla-truth/hlo/tiny-minimal-dot.hlo.txt.gz, whose output shapes show them:
    // f32[factor, M, N] where the dot is split, bf16[M, N] where it is not.
    struct Dot {
        double batch, m, n, k;
        std::int64_t factor;
        const char* seen;
    };
    const Dot dots[] = {
        {1, 512, 256, 256, 4, "gemm_fusion_dot.62, the attention output's: f32[4,512,256]"},
        {1, 256, 256, 512, 8, "gemm_fusion_dot.72, its weight gradient: f32[8,256,256]"},
        {1, 256, 1024, 512, 4, "gemm_fusion_dot.70, gate's and up's weight gradient: f32[4,256,1024]"},
        {1, 256, 768, 512, 4, "gemm_fusion_dot.71, q's, k's and v's weight gradient: f32[4,768,256]"},
        {1, 512, 256, 1024, 8, "gemm_fusion_dot.74, the LM head's input gradient: f32[8,512,256]"},
        {1, 512, 768, 256, 1, "gemm_fusion_dot.39, the q, k, v projection: bf16[512,768]"},
        {1, 512, 1024, 256, 1, "gemm_fusion_dot.40, gate and up: bf16[512,1024]"},
        {8, 256, 256, 64, 1, "gemm_fusion_dot.54, the attention scores: bf16[8,256,256]"},
        // The 1B steps' dots fill the device: none is split (tests/data/xla-truth/hlo/1b-b8-*).
        {1, 16384, 2048, 2048, 1, "a 1B projection at batch 8"},
        {1, 2048, 5632, 16384, 1, "a 1B MLP weight gradient at batch 8"},
    };
    for (const auto& dot : dots) {
        CAPTURE(dot.seen);
        const auto split = parallel::xla_gpu_split_k(dot.batch, dot.m, dot.n, dot.k, 132);
        CHECK(split.factor == dot.factor);
        CHECK(split.partial_bytes ==
              (dot.factor > 1 ? static_cast<double>(dot.factor) * dot.batch * dot.m * dot.n * 4.0 : 0.0));
        CHECK(parallel::xla_gpu_split_k(dot.batch, dot.m, dot.n, dot.k, 0).factor == 1);  // a TPU
    }
}

TEST_CASE("the split-K rule gives the split of every dot in the XLA:GPU fixture modules") {
    // Each dot of tests/data/xla-truth/hlo/*.hlo.txt.gz (the single-device steps, compiled by
    // XLA:GPU for the H200; the spmd-* modules are XLA:CPU's) as the rewriter left it: a split dot
    // writes its partials in fp32 with the split as its leading batch dimension, f32[factor, ...]
    // over a k / factor slice of the contraction; a dot left whole writes bf16. The rule, given the
    // dot before the split, must give that factor (1 for a whole dot).
    namespace fs = std::filesystem;
    auto product = [](const std::vector<std::int64_t>& dims, auto keep) {
        std::int64_t p = 1;
        for (std::size_t d = 0; d < dims.size(); ++d)
            if (keep(static_cast<std::int64_t>(d))) p *= dims[d];
        return p;
    };
    auto among = [](const std::vector<std::int64_t>& set, std::int64_t d) {
        return std::find(set.begin(), set.end(), d) != set.end();
    };
    int modules = 0, dots = 0, split = 0;
    for (const auto& entry : fs::directory_iterator(test::source_path("tests/data/xla-truth/hlo"))) {
        if (entry.path().filename().string().starts_with("spmd-")) continue;
        const hlo::Module m = hlo::read_module_file(entry.path().string());
        ++modules;
        for (const auto& computation : m.computations) {
            for (const auto& dot : computation.instructions) {
                if (dot.opcode != hlo::Opcode::dot) continue;
                const auto& lhs =
                    computation.instructions[static_cast<std::size_t>(dot.operands[0])].shape.dims;
                const auto& rhs =
                    computation.instructions[static_cast<std::size_t>(dot.operands[1])].shape.dims;
                const auto& d = dot.dot;
                const std::int64_t batch =
                    product(lhs, [&](std::int64_t i) { return among(d.lhs_batch, i); });
                const std::int64_t rows = product(lhs, [&](std::int64_t i) {
                    return !among(d.lhs_batch, i) && !among(d.lhs_contracting, i);
                });
                const std::int64_t cols = product(rhs, [&](std::int64_t i) {
                    return !among(d.rhs_batch, i) && !among(d.rhs_contracting, i);
                });
                const std::int64_t slice =
                    product(lhs, [&](std::int64_t i) { return among(d.lhs_contracting, i); });
                const bool partials = dot.shape.type == hlo::ElementType::f32;
                const std::int64_t factor = partials ? dot.shape.dims.front() : 1;
                CAPTURE(entry.path().filename().string());
                CAPTURE(dot.name);
                CHECK(parallel::xla_gpu_split_k(static_cast<double>(batch / factor),
                                                static_cast<double>(rows), static_cast<double>(cols),
                                                static_cast<double>(slice * factor), 132)
                          .factor == factor);
                ++dots;
                split += partials ? 1 : 0;
            }
        }
    }
    CHECK(modules == 106);
    CHECK(dots == 1040);  // every dot of every fused computation
    CHECK(split == 139);  // the tiny steps, the ViT heads, one dot in each MoE step, two in a Gemma step
}

TEST_CASE("split-K partials live while their matmul runs, the input gradient's of each merged weight") {
    const auto spec = test::load_config("tests/validation/xla/xla-tiny-minimal-dot.yaml");
    REQUIRE(spec.topology.chip.streaming_multiprocessors == 132);
    const auto gpu = run::simulate(spec);
    auto op_named = [](const parallel::DeviceProgram& program, std::string_view name) {
        for (const auto& op : program.ops)
            if (op.name == name) return op;
        FAIL("no op " << name);
        return parallel::DeviceOp{};
    };
    // 512 tokens, d_model 256, 4 heads of 64 (models/llama-tiny.yaml): q's, k's and v's input
    // gradients are three dots of k = 256, each split in 4 (as the attention output's, above), their
    // partials summed by one fusion (tiny-minimal-dot: gemm_fusion_dot.67, .68 and .69 read by
    // input_add_reduce_fusion); the weight gradient is one dot, as the module's gemm_fusion_dot.71.
    const double partial = 4.0 * 512 * 256 * 4.0;
    CHECK(op_named(gpu.program, "layer0.qkv.dgrad").split_k_bytes == 3.0 * partial);
    CHECK(op_named(gpu.program, "layer0.qkv.wgrad").split_k_bytes == 4.0 * 256 * 768 * 4.0);
    CHECK(op_named(gpu.program, "layer0.qkv").split_k_bytes == 0.0);
    // On a TPU there is no such pass, and the peak is lower by what the partials added.
    auto tpu = spec;
    tpu.topology.chip.streaming_multiprocessors = 0;
    const auto without = run::simulate(tpu);
    CHECK(op_named(without.program, "layer0.qkv.dgrad").split_k_bytes == 0.0);
    CHECK(without.memory.peak_bytes < gpu.memory.peak_bytes);
    // The partials are temporaries of the op running at the peak: the peak without them is at most
    // the peak less the largest partial of any op.
    double largest = 0.0;
    for (const auto& op : gpu.program.ops) largest = std::max(largest, op.split_k_bytes);
    CHECK(without.memory.peak_bytes >= gpu.memory.peak_bytes - largest);
}

TEST_CASE("a peak reached while compute waits on a synchronous collective names that collective") {
    // PyTorch/XLA's synchronous reduce-scatters: the peak is the instant one allocates its buffer,
    // with no compute op running (found by differential fuzzing, where the report named no op).
    auto spec = test::run_from_text(R"(schema: podsim.run/v1
model: gpt2-2b
topology: tpu-v5p
slice: 1x4x24
mesh: {tensor: 6, fsdp: 16, data: 1}
training: {global_batch: 128, seq_len: 128, microbatches: 4, dtype: int8, master_dtype: fp32, optimizer: sgd, remat: none, attention: mha}
runtime: {framework: pytorch-xla, async_collectives: false, collective_matmul: true, fp32_reduce_scatter: true}
)");
    spec.model.layers = 35;
    spec.model.kv_heads = 2;
    const auto sim = run::simulate(spec);
    REQUIRE(sim.memory.peak_op >= 0);
    const auto& op = sim.program.ops[static_cast<std::size_t>(sim.memory.peak_op)];
    CHECK(op.category == parallel::OpCategory::reduce_scatter);
    CHECK(sim.report.memory.peak_op == op.name);
}
