// A compiled module lowered to its per-device program (sim/hlo/lower.cpp) and simulated through the
// program seam (run::simulate): small hand-written modules whose every number is counted
// here by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "config/load.hpp"
#include "core/diagnostics.hpp"
#include "hlo/lower.hpp"
#include "hlo/op_work.hpp"
#include "hlo/text_reader.hpp"
#include "memory/buffer_profile.hpp"
#include "run/module_run.hpp"
#include "support.hpp"

using namespace podsim;
using podsim::test::source_path;

namespace {

hardware::TopologySpec topology(const std::string& name) {
    return config::load_topology_file(source_path("topologies/" + name + ".yaml"));
}

hlo::LoweredModule lower(const std::string& text, const hardware::TopologySpec& t, const std::string& slice,
                         hlo::DeviceOrder order = {}) {
    const hlo::Module m = hlo::read_text("m.hlo", text);
    return hlo::lower_module(m, hlo::LowerOptions{t, *hardware::parse_slice_shape(slice), order});
}

run::Simulation simulate(hlo::LoweredModule lowered, const hardware::TopologySpec& t,
                         const std::string& slice) {
    run::ProgramSpec spec;
    spec.name = "m";
    spec.topology = t;
    spec.slice = hardware::normalized_slice(t, *hardware::parse_slice_shape(slice));
    spec.mesh = lowered.mesh;
    spec.runtime.async_collectives = true;
    run::SimulationCache cache;
    return run::simulate(std::move(lowered.program), spec, cache);
}

std::vector<std::string> kernel_names(const parallel::DeviceProgram& p) {
    std::vector<std::string> out;
    for (const auto& op : p.ops)
        if (op.category != parallel::OpCategory::host) out.emplace_back(op.name);
    return out;
}

std::string replaced(std::string text, const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
}

template <typename Body>
std::string error_of(Body&& body) {
    try {
        body();
    } catch (const core::UserError& e) {
        return e.what();
    }
    return {};
}

// A loop without known_trip_count: `i < 7` from 1 by 2 runs 3 times (i = 1, 3, 5).
constexpr const char* kLoop = R"(HloModule loop, is_scheduled=true

%body (p: (s32[], f32[256,256])) -> (s32[], f32[256,256]) {
  %p = (s32[], f32[256,256]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %two = s32[] constant(2)
  %next = s32[] add(%i, %two)
  %x = f32[256,256]{1,0} get-tuple-element(%p), index=1
  %y = f32[256,256]{1,0} dot(%x, %x), lhs_contracting_dims={1}, rhs_contracting_dims={0}, metadata={op_name="jit(step)/jvp()/dot_general"}
  ROOT %t = (s32[], f32[256,256]{1,0}) tuple(%next, %y)
}

%cond (c: (s32[], f32[256,256])) -> pred[] {
  %c = (s32[], f32[256,256]{1,0}) parameter(0)
  %k = s32[] get-tuple-element(%c), index=0
  %n = s32[] constant(7)
  ROOT %lt = pred[] compare(%k, %n), direction=LT
}

ENTRY %main (w: f32[256,256]) -> f32[256,256] {
  %w = f32[256,256]{1,0} parameter(0)
  %one = s32[] constant(1)
  %init = (s32[], f32[256,256]{1,0}) tuple(%one, %w)
  %loop = (s32[], f32[256,256]{1,0}) while(%init), condition=%cond, body=%body
  ROOT %out = f32[256,256]{1,0} get-tuple-element(%loop), index=1
}
)";

}  // namespace

TEST_CASE("hlo lowering: a loop runs its trip count, read off its condition") {
    const auto v4 = topology("tpu-v4");
    const hlo::LoweredModule l = lower(kLoop, v4, "1");
    // The body's one kernel (the add of a scalar is a kernel too) per iteration.
    const auto names = kernel_names(l.program);
    CHECK(std::count(names.begin(), names.end(), "y") == 3);
    CHECK(std::count(names.begin(), names.end(), "next") == 3);
    CHECK(l.loops == 1);
    // Executed FLOPs: 3 x 2 x 256^3.
    CHECK(l.flops_per_device == doctest::Approx(3.0 * 2.0 * 256.0 * 256.0 * 256.0));
    // Each iteration is a layer of the trace; its dot is forward (jvp in its op_name).
    int layer = 0;
    for (const auto& op : l.program.ops) {
        if (op.name != "y") continue;
        CHECK(op.layer == layer++);
        CHECK(op.phase == workload::Phase::forward);
        CHECK(op.category == parallel::OpCategory::matmul);
    }
    // The loop state stays in place: the dots write into the buffer the loop started with (the
    // parameter), so no iteration allocates a 256 KiB matrix of its own.
    double matrices = 0.0;
    for (const auto& b : l.program.buffers)
        if (b.bytes == 256.0 * 256.0 * 4.0) ++matrices;
    CHECK(matrices == 1);

    // Start, step and direction from the module: LE 10 from 2 by 2 runs 5 times.
    std::string text =
        replaced(replaced(replaced(kLoop, "constant(7)", "constant(10)"), "direction=LT", "direction=LE"),
                 "%one = s32[] constant(1)", "%one = s32[] constant(2)");
    const auto five = kernel_names(lower(text, v4, "1").program);
    CHECK(std::count(five.begin(), five.end(), "y") == 5);
    // A known_trip_count wins over the condition.
    text = replaced(kLoop, "body=%body", "body=%body, backend_config={\"known_trip_count\":{\"n\":\"4\"}}");
    const auto four = kernel_names(lower(text, v4, "1").program);
    CHECK(std::count(four.begin(), four.end(), "y") == 4);
    // One that is no whole number of iterations is an error at the loop's line, not read as its
    // digits (-1 ran once) nor passed over for the condition.
    for (const char* n : {"-1", "abc", "", "4x", "99999999999999999999"}) {
        CAPTURE(n);
        text =
            replaced(kLoop, "body=%body",
                     fmt::format("body=%body, backend_config={{\"known_trip_count\":{{\"n\":\"{}\"}}}}", n));
        const std::string bad = error_of([&] { lower(text, v4, "1"); });
        CHECK(bad.find("m.hlo:24:") != std::string::npos);
        CHECK(bad.find("known_trip_count of its backend_config is not a whole number") != std::string::npos);
    }
    text = replaced(kLoop, "body=%body", "body=%body, backend_config={\"known_trip_count\":{\"n\":0}}");
    const auto none = kernel_names(lower(text, v4, "1").program);
    CHECK(std::count(none.begin(), none.end(), "y") == 0);
    // Neither: an error at the loop's line.
    text = replaced(
        replaced(kLoop, "ROOT %lt = pred[] compare(%k, %n), direction=LT", "ROOT %lt = pred[] is-finite(%n)"),
        "%n = s32[] constant(7)", "%n = f32[] constant(7)");
    const std::string e = error_of([&] { lower(text, v4, "1"); });
    CHECK(e.find("m.hlo:24:") != std::string::npos);
    CHECK(e.find("cannot tell how many times the loop runs") != std::string::npos);
}

namespace {

// Two all-gathers of 64 MiB on the 16 chips of a v4 2x2x4 over the mesh's 'data' axis (z, 4 chips)
// beside a matmul: synchronously, then as a start/done pair with the matmul between.
std::string gathers(bool async) {
    const std::string gather =
        async
            ? "%ags = (bf16[2048,4096]{1,0}, bf16[8192,4096]{1,0}) all-gather-start(%a), channel_id=1, "
              "replica_groups=mesh['data'=4,'model'=4] {'data'}, dimensions={0}, use_global_device_ids=true\n"
              "  %mm = f32[4096,4096]{1,0} dot(%b, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
              "  %ag = bf16[8192,4096]{1,0} all-gather-done(%ags)\n"
            : "%ag = bf16[8192,4096]{1,0} all-gather(%a), channel_id=1, "
              "replica_groups=mesh['data'=4,'model'=4] "
              "{'data'}, dimensions={0}, use_global_device_ids=true\n"
              "  %mm = f32[4096,4096]{1,0} dot(%b, %b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n";
    return fmt::format(R"(HloModule gathers, is_scheduled=true, num_partitions=16

ENTRY %main (a: bf16[2048,4096], b: f32[4096,4096]) -> (bf16[8192,4096], f32[4096,4096]) {{
  %a = bf16[2048,4096]{{1,0}} parameter(0)
  %b = f32[4096,4096]{{1,0}} parameter(1)
  {}  ROOT %t = (bf16[8192,4096]{{1,0}}, f32[4096,4096]{{1,0}}) tuple(%ag, %mm)
}}
)",
                       gather);
}

}  // namespace

TEST_CASE("hlo lowering: collectives on the torus, async pairs overlap") {
    const auto v4 = topology("tpu-v4");
    const hlo::LoweredModule sync = lower(gathers(false), v4, "2x2x4");
    CHECK(sync.devices == 16);
    // The mesh placement of create_device_mesh (network::map_mesh_axes): 'model' (4, the last axis)
    // first takes whole dimensions, the most of them: x and y (2 x 2); 'data' gets z (4).
    REQUIRE(sync.program.comm_axes.size() == 1);
    const auto& axis = sync.program.comm_axes[0];
    CHECK(axis.name == "data");
    CHECK(axis.size == 4);
    REQUIRE(axis.parts.size() == 1);
    CHECK(axis.parts[0].dim == 2);
    CHECK(axis.parts[0].size == 4);
    // The full array: the gathered 8192 x 4096 bf16.
    CHECK(sync.collective_bytes.at("all-gather") == 8192.0 * 4096.0 * 2.0);
    const run::Simulation s = simulate(sync, v4, "2x2x4");
    const run::Simulation a = simulate(lower(gathers(true), v4, "2x2x4"), v4, "2x2x4");
    // Synchronous: the matmul waits for the gather. As a pair: they overlap, and the step is the
    // longer of the two (plus nothing).
    const double gather = s.report.communication_s, matmul = s.report.compute_s;
    CHECK(gather > 0.0);
    CHECK(s.report.step_time_s == doctest::Approx(gather + matmul).epsilon(1e-6));
    CHECK(a.report.step_time_s == doctest::Approx(std::max(gather, matmul)).epsilon(1e-6));
    CHECK(a.report.overlapped_communication_s > 0.0);

    // The same groups in iota form, [4,4]<=[4,4]T(1,0) (ids differing in the first mesh index), give
    // the same torus placement.
    const std::string iota = replaced(gathers(false), "replica_groups=mesh['data'=4,'model'=4] {'data'}",
                                      "replica_groups=[4,4]<=[4,4]T(1,0)");
    const hlo::LoweredModule by_iota =
        lower(iota, v4, "2x2x4", hlo::DeviceOrder{hlo::DeviceOrder::Kind::devices, {}});
    REQUIRE(by_iota.program.comm_axes.size() == 1);
    // In JAX's device order (x fastest) ids 0,4,8,12 are the chips (0,0,0),(0,0,1),...: along z.
    CHECK(by_iota.program.comm_axes[0].parts.size() == 1);
    CHECK(by_iota.program.comm_axes[0].parts[0].dim == 2);
    CHECK(by_iota.program.comm_axes[0].parts[0].size == 4);
    // An explicit order puts them elsewhere: reversed, still along z.
    hlo::DeviceOrder reversed{hlo::DeviceOrder::Kind::list, {}};
    for (int i = 15; i >= 0; --i) reversed.list.push_back(i);
    CHECK(lower(iota, v4, "2x2x4", reversed).program.comm_axes[0].parts[0].dim == 2);
    // More devices than the slice has: an error.
    CHECK(error_of([&] { lower(gathers(false), v4, "2x2x1"); }).find("runs on 16 devices") !=
          std::string::npos);
    std::string why;
    CHECK_FALSE(hlo::parse_device_order("3,2,x", why));
}

TEST_CASE("hlo lowering: buffers live from their writer to their last reader, in place where XLA updates") {
    // p0 (donated, aliased to the output) is updated in place by a dynamic-update-slice fusion; a
    // temporary of 4 MiB lives from its fusion to the next; a custom call's workspace for its call.
    constexpr const char* kText =
        R"(HloModule inplace, is_scheduled=true, input_output_alias={ {}: (0, {}, may-alias) }

%fused_dus (s: f32[1024,1024], u: f32[1,1024], i: s32[]) -> f32[1024,1024] {
  %s = f32[1024,1024]{1,0} parameter(0)
  %u = f32[1,1024]{1,0} parameter(1)
  %i = s32[] parameter(2)
  %z = s32[] constant(0)
  ROOT %d = f32[1024,1024]{1,0} dynamic-update-slice(%s, %u, %i, %z)
}

%fused_exp (x: f32[1024,1024]) -> f32[1024,1024] {
  %x = f32[1024,1024]{1,0} parameter(0)
  ROOT %e = f32[1024,1024]{1,0} exponential(%x)
}

ENTRY %main (p0: f32[1024,1024], row: f32[1,1024], k: s32[]) -> f32[1024,1024] {
  %p0 = f32[1024,1024]{1,0} parameter(0)
  %row = f32[1,1024]{1,0} parameter(1)
  %k = s32[] parameter(2)
  %tmp = f32[1024,1024]{1,0} fusion(%p0), kind=kLoop, calls=%fused_exp
  %cc = (f32[1,1024]{1,0}, s8[1048576]{0}) custom-call(%tmp, %row), custom_call_target="__my$kernel"
  %r = f32[1,1024]{1,0} get-tuple-element(%cc), index=0
  ROOT %upd = f32[1024,1024]{1,0} fusion(%p0, %r, %k), kind=kLoop, calls=%fused_dus
}
)";
    const auto v4 = topology("tpu-v4");
    hlo::LoweredModule l = lower(kText, v4, "1");
    // Bytes: the exp reads and writes 4 MiB each; the update fusion reads the row (4 KiB) and writes
    // it in place, never reading the 4 MiB it updates.
    for (const auto& op : l.program.ops) {
        if (op.name == "tmp") CHECK(op.bytes == 2.0 * 4194304.0);
        if (op.name == "upd") CHECK(op.bytes == 2.0 * 4096.0 + 4.0);  // and the index
    }
    REQUIRE(l.notes.size() == 1);  // the unknown custom call, priced from its bytes
    CHECK(l.notes[0].find("__my$kernel") != std::string::npos);
    const run::Simulation sim = simulate(std::move(l), v4, "1");
    // Peak: the arguments (4 MiB + 4 KiB + 4 B), the temporary (4 MiB), the call's result and
    // workspace (4 KiB + 1 MiB) while the call runs; the output lives in p0's buffer.
    const double peak = 4194304.0 + 4096.0 + 4.0 + 4194304.0 + 4096.0 + 1048576.0;
    CHECK(sim.memory.peak_bytes == peak);
    CHECK(std::string(sim.program.ops[static_cast<std::size_t>(sim.memory.peak_op)].name) == "cc");
    CHECK(sim.memory.at_peak.params == 4194304.0 + 4096.0 + 4.0);
}

TEST_CASE("hlo op work: library calls priced from their configs") {
    // A cuBLAS GEMM [4096 x 2048] x [2048 x 1024], a Transformer Engine attention forward, a Pallas
    // kernel with its cost estimate.
    constexpr const char* kText = R"(HloModule calls

ENTRY %main (a: bf16[4096,2048], b: bf16[2048,1024], q: bf16[2,512,8,64]) -> f32[] {
  %a = bf16[4096,2048]{1,0} parameter(0)
  %b = bf16[2048,1024]{1,0} parameter(1)
  %q = bf16[2,512,8,64]{3,2,1,0} parameter(2)
  %g = (bf16[4096,1024]{1,0}, s8[4194304]{0}) custom-call(%a, %b), custom_call_target="__cublas$lt$matmul", backend_config={"gemm_backend_config":{"dot_dimension_numbers":{"lhs_batch_dimensions":[],"lhs_contracting_dimensions":["1"],"rhs_batch_dimensions":[],"rhs_contracting_dimensions":["0"]}}}
  %t = (bf16[2,512,8,64]{3,2,1,0}, f32[2,8,512,1]{3,2,1,0}) custom-call(%q, %q, %q), custom_call_target="te_fused_attn_forward_ffi", backend_config={attn_heads = 8 : i64, input_batch = 2 : i64, kv_max_seqlen = 512 : i64, mask_type = 2 : i64, q_max_seqlen = 512 : i64, qk_head_dim = 64 : i64, v_head_dim = 64 : i64}
  %p = f32[] custom-call(%a), custom_call_target="tpu_custom_call", backend_config={"custom_call_config": {"body": "AAAA", "cost_estimate": {"bytes_accessed":1000,"flops":123456,"remote_bytes_transferred":0,"transcendentals":0}}}
  ROOT %s = f32[] add(%p, %p)
}
)";
    const hlo::Module m = hlo::read_text("calls.hlo", kText);
    hlo::WorkModel work(m);
    const hlo::Computation& c = m.entry_computation();
    auto find = [&](const std::string& name) -> const hlo::Instruction& {
        for (const auto& i : c.instructions)
            if (i.name == name) return i;
        FAIL("no instruction " << name);
        return c.instructions.front();
    };
    const hlo::OpWork gemm = work.work(c, find("g"));
    CHECK(gemm.flops == 2.0 * 4096 * 1024 * 2048);
    CHECK(gemm.mm_m == 4096);
    CHECK(gemm.mm_n == 1024);
    CHECK(gemm.mm_k == 2048);
    // Operands and result, not the 4 MiB workspace.
    CHECK(gemm.bytes == (4096.0 * 2048 + 2048.0 * 1024 + 4096.0 * 1024) * 2);
    // Causal attention forward: 2 b h s s (d_qk + d_v) / 2.
    const hlo::OpWork attention = work.work(c, find("t"));
    CHECK(attention.flops == 2.0 * 2 * 8 * 512 * 512 * (64 + 64) / 2);
    const hlo::OpWork pallas = work.work(c, find("p"));
    CHECK(pallas.flops == 123456);
    CHECK(pallas.bytes == 1000);
    CHECK_FALSE(pallas.bytes_only);
    CHECK(work.unknown_targets().empty());
}

TEST_CASE("hlo op work: a library call's backend_config of the wrong types is an error at its line") {
    // nlohmann's operator[] and value() threw on a member of a number (exit 134); a contracting
    // dimension 1e300 was cast to int64, an attention batch of -2 or a Pallas cost of -1e30 FLOPs
    // gave a negative HFU.
    const std::string text = R"(HloModule calls

ENTRY %main (a: bf16[4096,2048], b: bf16[2048,1024], q: bf16[2,512,8,64]) -> f32[] {
  %a = bf16[4096,2048]{1,0} parameter(0)
  %b = bf16[2048,1024]{1,0} parameter(1)
  %q = bf16[2,512,8,64]{3,2,1,0} parameter(2)
  %g = (bf16[4096,1024]{1,0}, s8[4194304]{0}) custom-call(%a, %b), custom_call_target="__cublas$lt$matmul", backend_config={"gemm_backend_config":{"dot_dimension_numbers":{"lhs_batch_dimensions":[],"lhs_contracting_dimensions":["1"],"rhs_batch_dimensions":[],"rhs_contracting_dimensions":["0"]}}}
  %f = (bf16[2,512,8,64]{3,2,1,0}, u8[256]{0}) custom-call(%q, %q, %q), custom_call_target="__cudnn$fmhaSoftmax", backend_config={"cudnn_fmha_backend_config":{"intermediate_tensor_shape":{"dimensions":["2","8","512","512"]},"mask_type":"CAUSAL"}}
  %p = f32[] custom-call(%a), custom_call_target="tpu_custom_call", backend_config={"custom_call_config": {"body": "AAAA", "cost_estimate": {"bytes_accessed":1000,"flops":123456}}}
  ROOT %s = f32[] add(%p, %p)
}
)";
    auto work_of = [](const std::string& module, const std::string& name) {
        const hlo::Module m = hlo::read_text("calls.hlo", module);
        hlo::WorkModel work(m);
        const hlo::Computation& c = m.entry_computation();
        for (const auto& i : c.instructions)
            if (i.name == name) return work.work(c, i);
        FAIL("no instruction " << name);
        return hlo::OpWork{};
    };
    CHECK(work_of(text, "f").flops == 2.0 * 2 * 8 * 512 * 512 * (64 + 64) / 2);
    const std::pair<std::string, std::string> cases[] = {
        {R"("gemm_backend_config":{)", R"("gemm_backend_config":5,"x":{)"},
        {R"("dot_dimension_numbers":{)", R"("dot_dimension_numbers":7,"x":{)"},
        {R"("lhs_contracting_dimensions":["1"])", R"("lhs_contracting_dimensions":[1e300])"},
        {R"("lhs_contracting_dimensions":["1"])", R"("lhs_contracting_dimensions":["2"])"},
        {R"("cudnn_fmha_backend_config":{)", R"("cudnn_fmha_backend_config":3,"x":{)"},
        {R"("dimensions":["2")", R"("dimensions":["-2")"},
        {R"("mask_type":"CAUSAL")", R"("mask_type":2)"},
        {R"("flops":123456)", R"("flops":-1e30)"},
        {R"("bytes_accessed":1000)", R"("bytes_accessed":"x")"},
    };
    for (const auto& c : cases) {
        const std::string& from = c.first;  // (clang 14 lambdas cannot capture structured bindings)
        const std::string& to = c.second;
        CAPTURE(to);
        const std::string bad = replaced(text, from, to);
        const std::string name =
            to.find("flops") != std::string::npos || to.find("bytes") != std::string::npos ? "p"
            : to.find("gemm") != std::string::npos || to.find("dot_") != std::string::npos ||
                    to.find("lhs") != std::string::npos
                ? "g"
                : "f";
        const std::string e = error_of([&] { work_of(bad, name); });
        CHECK(e.find("calls.hlo:") != std::string::npos);
        CHECK(e.find(name + ": backend_config: ") != std::string::npos);
    }
}

TEST_CASE("hlo import options: a batch, sequence or model FLOPs out of bounds is an error") {
    // --model-flops nan gave MFU 0 and inf an MFU of inf%; --global-batch -4 was passed over,
    // 99999999999999 x --seq-len 99999999999 (cut to int) gave an MFU of 3.8e20%; --global-batch
    // without --model was dropped silently.
    auto run_with = [](auto&& set) {
        run::ModuleRunRequest request;
        request.path = "loop.hlo";
        request.bytes = kLoop;
        request.topology = source_path("topologies/tpu-v4.yaml");
        set(request);
        return run::run_module(request);
    };
    const std::pair<std::function<void(run::ModuleRunRequest&)>, std::string> cases[] = {
        {[](auto& r) { r.model_flops = std::nan(""); },
         "--model-flops: error: must be a finite count from 0"},
        {[](auto& r) { r.model_flops = HUGE_VAL; }, "--model-flops: error: must be a finite count from 0"},
        {[](auto& r) { r.model_flops = -5; }, "--model-flops: error: must be a finite count from 0"},
        {[](auto& r) {
             r.model = source_path("models/gpt2-small.yaml");
             r.global_batch = -4;
             r.seq_len = 5;
         },
         "--global-batch: error: must be positive, found -4"},
        {[](auto& r) {
             r.model = source_path("models/gpt2-small.yaml");
             r.global_batch = 8;
             r.seq_len = 99999999999;
         },
         "--seq-len: error: must be at most 1048576"},
        {[](auto& r) { r.global_batch = 8; }, "--global-batch: error: counts the model FLOPs of --model"},
    };
    for (const auto& c : cases) {
        const auto& set = c.first;  // (clang 14 lambdas cannot capture structured bindings)
        const std::string& expected = c.second;
        CAPTURE(expected);
        const std::string e = error_of([&] { run_with(set); });
        CHECK(e.find(expected) != std::string::npos);
    }
    const auto given = run_with([](auto& r) { r.model_flops = 1e12; });
    CHECK(given.simulation.report.model_flops_per_step == 1e12);
}

TEST_CASE("hlo placement: JAX's device order puts the cores of a v3 chip next to each other") {
    // A v3 2x2 is 8 devices (2 per chip): ids 0 and 1 are the two cores of chip (0,0), so a group
    // {0,1} runs over the chip's own link, and {0,2} over x.
    const auto v3 = topology("tpu-v3");
    const hlo::Placement placement(v3, *hardware::parse_slice_shape("2x2"), 8, {}, hlo::DeviceOrder{},
                                   "m.hlo");
    const int core = hardware::intra_chip_dimension(v3);
    REQUIRE(core >= 0);
    const auto cores = placement.parts_of({0, 1});
    REQUIRE(cores.parts.size() == 1);
    CHECK(cores.parts[0].dim == core);
    const auto x = placement.parts_of({0, 2});
    REQUIRE(x.parts.size() == 1);
    CHECK(x.parts[0].dim == 0);
    CHECK(x.exact);
    // Not evenly spaced: spanned, and said so.
    CHECK_FALSE(placement.parts_of({0, 2, 3}).exact);
}

TEST_CASE("hlo lowering: a module with any one line removed or duplicated lowers or is a user error") {
    // What the readers accept, lowering must take without crashing: every damaged variant of the
    // small modules either lowers and simulates or stops with a located message.
    const auto v4 = topology("tpu-v4");
    for (const std::string& text : {std::string(kLoop), gathers(true), gathers(false)}) {
        std::vector<std::string> lines;
        std::stringstream in(text);
        for (std::string line; std::getline(in, line);) lines.push_back(line);
        for (std::size_t drop = 0; drop < lines.size(); ++drop) {
            for (const bool duplicate : {false, true}) {
                std::string damaged;
                for (std::size_t i = 0; i < lines.size(); ++i) {
                    if (i != drop || duplicate) damaged += lines[i] + "\n";
                    if (i == drop && duplicate) damaged += lines[i] + "\n";
                }
                CAPTURE(damaged);
                try {
                    (void)simulate(lower(damaged, v4, "2x2x4"), v4, "2x2x4");
                } catch (const core::UserError& e) {
                    CHECK(!e.diagnostics().empty());
                }
            }
        }
    }
}
