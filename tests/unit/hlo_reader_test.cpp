// The readers of compiled XLA modules (sim/hlo): HLO text and HloProto, every construct the
// fixtures and the public samples use, and the errors for what they cannot read.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "core/diagnostics.hpp"
#include "core/gzip.hpp"
#include "hlo/read_module.hpp"
#include "hlo/text_reader.hpp"
#include "support.hpp"

using namespace podsim;
using podsim::test::source_path;

namespace {

std::string gunzipped(const std::string& relative) {
    core::FileBytes file = core::read_maybe_gzipped(source_path(relative), std::uint64_t{1} << 30);
    REQUIRE(file.error.empty());
    return file.bytes;
}

// The message of the UserError `body` throws (empty when it does not throw).
template <typename Body>
std::string error_of(Body&& body) {
    try {
        body();
    } catch (const core::UserError& e) {
        return e.what();
    }
    return {};
}

const hlo::Instruction* find(const hlo::Module& m, std::string_view name) {
    for (const auto& c : m.computations)
        for (const auto& i : c.instructions)
            if (i.name == name) return &i;
    return nullptr;
}

// A small module with the constructs of a scanned, SPMD-partitioned training step.
constexpr const char* kSmall =
    R"(HloModule small, is_scheduled=true, input_output_alias={ {0}: (0, {}, may-alias) }, num_partitions=8

%body (p: (s32[], bf16[4,128]{1,0})) -> (s32[], bf16[4,128]{1,0}) {
  %p = (s32[], bf16[4,128]{1,0}) parameter(0)
  %i = s32[] get-tuple-element(%p), index=0
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %x = bf16[4,128]{1,0} get-tuple-element(%p), index=1
  %ag = bf16[8,128]{1,0} all-gather(%x), channel_id=1, replica_groups=[4,2]<=[2,4]T(1,0), dimensions={0}, use_global_device_ids=true
  %rs = bf16[4,128]{1,0} reduce-scatter(%ag), channel_id=2, replica_groups={{0,1},{2,3},{4,5},{6,7}}, dimensions={0}, to_apply=%add
  ROOT %t = (s32[], bf16[4,128]{1,0}) tuple(%next, %rs)
}

%cond (c: (s32[], bf16[4,128]{1,0})) -> pred[] {
  %c = (s32[], bf16[4,128]{1,0}) parameter(0)
  %k = s32[] get-tuple-element(%c), index=0
  %n = s32[] constant(6)
  ROOT %lt = pred[] compare(%k, %n), direction=LT
}

%add (a: bf16[], b: bf16[]) -> bf16[] {
  %a = bf16[] parameter(0)
  %b = bf16[] parameter(1)
  ROOT %s = bf16[] add(%a, %b)
}

ENTRY %main (w: bf16[4,128]) -> bf16[4,128] {
  %w = bf16[4,128]{1,0:T(8,128)(2,1)S(1)} parameter(0), metadata={op_name="params['w']"}
  %zero = s32[] constant(0)
  %init = (s32[], bf16[4,128]{1,0}) tuple(%zero, %w)
  %loop = (s32[], bf16[4,128]{1,0}) while(%init), condition=%cond, body=%body, backend_config={"known_trip_count":{"n":"6"}}
  %out = bf16[4,128]{1,0} get-tuple-element(%loop), index=1
  %ars = bf16[4,128]{1,0} all-reduce-start(%out), channel_id=3, replica_groups=mesh['data'=4,'model'=2] {'data'}, use_global_device_ids=true, to_apply=%add
  ROOT %ard = bf16[4,128]{1,0} all-reduce-done(%ars)
}
)";

}  // namespace

TEST_CASE("hlo text: the constructs of a scanned SPMD step") {
    hlo::Module m = hlo::read_text("small.hlo", kSmall);
    CHECK(m.name == "small");
    CHECK(m.is_scheduled);
    CHECK(m.num_partitions == 8);
    REQUIRE(m.input_output_alias.size() == 1);
    CHECK(m.input_output_alias[0].parameter == 0);
    CHECK(m.entry_computation().name == "main");
    const hlo::Instruction* loop = find(m, "loop");
    REQUIRE(loop);
    CHECK(loop->opcode == hlo::Opcode::while_);
    CHECK(loop->known_trip_count == 6);
    CHECK(m.computations[static_cast<std::size_t>(loop->body)].name == "body");
    CHECK(m.computations[static_cast<std::size_t>(loop->condition)].name == "cond");
    // TPU layout: tiles pad the minor dimensions (4x128 bf16 -> 8x128), memory space 1.
    const hlo::Instruction* w = find(m, "w");
    REQUIRE(w);
    CHECK(w->shape.tile == std::vector<std::int64_t>{8, 128});
    CHECK(w->shape.memory_space == 1);
    CHECK(w->shape.bytes() == doctest::Approx(8 * 128 * 2));
    CHECK(w->op_name == "params['w']");
    // Replica groups, three forms.
    const hlo::Instruction* ag = find(m, "ag");
    REQUIRE(ag);
    CHECK(ag->replica_groups.form == hlo::ReplicaGroups::Form::iota);
    // iota(8) as [2,4], transposed: rows 0 4 | 1 5 | 2 6 | 3 7.
    CHECK(ag->replica_groups.expand(8) ==
          std::vector<std::vector<std::int64_t>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
    const hlo::Instruction* rs = find(m, "rs");
    REQUIRE(rs);
    CHECK(rs->replica_groups.expand(8) ==
          std::vector<std::vector<std::int64_t>>{{0, 1}, {2, 3}, {4, 5}, {6, 7}});
    const hlo::Instruction* ars = find(m, "ars");
    REQUIRE(ars);
    CHECK(ars->opcode == hlo::Opcode::all_reduce_start);
    CHECK(ars->replica_groups.form == hlo::ReplicaGroups::Form::mesh_axes);
    // Devices differing in 'data' (row-major device = data * 2 + model).
    CHECK(ars->replica_groups.expand(8) ==
          std::vector<std::vector<std::int64_t>>{{0, 2, 4, 6}, {1, 3, 5, 7}});
}

TEST_CASE("hlo replica groups: mesh sub-axes and the iota of XLA's docs") {
    std::string why;
    // {a:(1)2} of mesh a=8: a reshaped [1,2,4], the middle part grouped: ids i with the same i/4
    // and i%2... device = x*4 + y*... as XLA computes it: reshape [8] -> [1,2,4], group dim 1.
    auto sub = hlo::parse_replica_groups("mesh['a'=8] {'a':(1)2}", why);
    REQUIRE(sub);
    CHECK(sub->expand(8) == std::vector<std::vector<std::int64_t>>{{0, 4}, {1, 5}, {2, 6}, {3, 7}});
    auto iota = hlo::parse_replica_groups("[2,64]<=[128]", why);
    REQUIRE(iota);
    auto groups = iota->expand(128);
    REQUIRE(groups.size() == 2);
    CHECK(groups[1].front() == 64);
    auto empty = hlo::parse_replica_groups("{}", why);
    REQUIRE(empty);
    CHECK(empty->expand(4) == std::vector<std::vector<std::int64_t>>{{0, 1, 2, 3}});
    CHECK_FALSE(hlo::parse_replica_groups("[2,3]<=[8]", why));
    CHECK(why.find("do not cover") != std::string::npos);
    CHECK_FALSE(hlo::parse_replica_groups("mesh['a'=2] {'b'}", why));
    CHECK(why.find("'b'") != std::string::npos);
}

TEST_CASE("hlo text: every construct it cannot read is a FILE:LINE:COL error naming it") {
    auto replace = [](std::string text, const std::string& from, const std::string& to) {
        const auto at = text.find(from);
        REQUIRE(at != std::string::npos);
        text.replace(at, from.size(), to);
        return text;
    };
    // Line 29 is `%zero = s32[] constant(0)` in the entry.
    std::string e =
        error_of([&] { hlo::read_text("m.hlo", replace(kSmall, "constant(0)", "frobnicate(0)")); });
    CHECK(e.find("m.hlo:29:") != std::string::npos);
    CHECK(e.find("unknown opcode 'frobnicate'") != std::string::npos);
    e = error_of([&] { hlo::read_text("m.hlo", replace(kSmall, "%zero = s32[]", "%zero = q32[]")); });
    CHECK(e.find("unknown element type 'q32'") != std::string::npos);
    // Dimensions each in range whose product overflows 64 bits (XLA refuses such a shape): 2^200
    // bytes were reported as memory that does not fit.
    e = error_of([&] {
        hlo::read_text("m.hlo", replace(kSmall, "%one = s32[] constant(1)",
                                        "%one = s32[1099511627776,1099511627776,1099511627776] constant(1)"));
    });
    CHECK(e.find("m.hlo:6:1: error: one: its shape holds 5.317e+36 bytes: more than 2^63 - 1") !=
          std::string::npos);
    e = error_of(
        [&] { hlo::read_text("m.hlo", replace(kSmall, "tuple(%zero, %w)", "tuple(%zero, %nowhere)")); });
    CHECK(e.find("operand %nowhere") != std::string::npos);
    e = error_of([&] {
        hlo::read_text("m.hlo", replace(kSmall, "replica_groups=[4,2]<=[2,4]T(1,0)",
                                        "replica_groups=[4,2]<=[2,4]T(1,1)"));
    });
    CHECK(e.find("replica_groups") != std::string::npos);
    CHECK(e.find("not a permutation") != std::string::npos);
    e = error_of([&] { hlo::read_text("m.hlo", replace(kSmall, "body=%body", "body=%nobody")); });
    CHECK(e.find("%nobody") != std::string::npos);
    e = error_of(
        [&] { hlo::read_text("m.hlo", replace(kSmall, "dimensions={0}, use", "dimensions={0, use")); });
    CHECK(e.find("m.hlo:9:") != std::string::npos);
    // Several mistakes: all of them.
    e = error_of([&] {
        hlo::read_text("m.hlo",
                       replace(replace(kSmall, "constant(1)", "konstant(1)"), "constant(6)", "konstant(6)"));
    });
    CHECK(e.find("m.hlo:6:") != std::string::npos);
    CHECK(e.find("m.hlo:17:") != std::string::npos);
    CHECK(error_of([] { hlo::read_text("m.hlo", "this is not a module"); }).find("HloModule") !=
          std::string::npos);
    CHECK(error_of([] { hlo::read_text("m.hlo", ""); }).find("empty") != std::string::npos);
}

TEST_CASE("hlo proto: truncated and foreign bytes are errors, not crashes") {
    const std::string proto =
        gunzipped("tests/data/xla-truth/dump-1b-b8-minimal-flash/after_optimizations.hlo.pb.gz");
    for (std::size_t cut : {std::size_t{1}, std::size_t{100}, proto.size() / 2, proto.size() - 1}) {
        const std::string e = error_of([&] { hlo::read_module("cut.hlo.pb", proto.substr(0, cut)); });
        CHECK_MESSAGE(!e.empty(), "cut at ", cut);
    }
    CHECK(!error_of([] { hlo::read_module("junk.hlo.pb", std::string("\xff\xff\xff\xff", 4)); }).empty());
}

TEST_CASE("hlo fixtures: every module of tests/data parses, text and proto") {
    namespace fs = std::filesystem;
    int modules = 0;
    for (const auto& entry : fs::directory_iterator(source_path("tests/data/xla-truth/hlo"))) {
        const hlo::Module m = hlo::read_module_file(entry.path().string());
        CHECK_MESSAGE(m.is_scheduled, entry.path());
        CHECK(m.instruction_count() > 100);
        ++modules;
    }
    // gpu.jsonl 23, gpu-families.jsonl 16, gpu-more.jsonl 18, gpu-act.jsonl 8, gpu-moe.jsonl 7,
    // gpu-shapes.jsonl 18 (of its 20 configs, two did not compile), gpu-tied.jsonl 16, spmd.jsonl 7
    CHECK(modules == 113);
    for (const char* sample :
         {"tests/data/xla__hlo_llama31_70b_bf16_16x8.hlo", "tests/data/xla__hlo_llama3_8b_cp_bf16_1x4.hlo"}) {
        const hlo::Module m = hlo::read_module_file(source_path(sample));
        CHECK(m.instruction_count() > 1000);
    }
    // The 8B sample's ring attention: collective-permutes with source-target pairs, conditionals.
    const hlo::Module cp =
        hlo::read_module_file(source_path("tests/data/xla__hlo_llama3_8b_cp_bf16_1x4.hlo"));
    int permutes = 0, conditionals = 0;
    for (const auto& c : cp.computations)
        for (const auto& i : c.instructions) {
            permutes += i.opcode == hlo::Opcode::collective_permute && !i.source_target_pairs.empty();
            conditionals += i.opcode == hlo::Opcode::conditional;
        }
    CHECK(permutes == 11);
    CHECK(conditionals == 9);

    // The full dump: its HloProto and its text are the same module. The dump's text leaves
    // get-tuple-elements out (`%t#k` operands); the reader makes them back.
    const std::string dir = "tests/data/xla-truth/dump-1b-b8-minimal-flash/";
    const hlo::Module proto = hlo::read_module_file(source_path(dir + "after_optimizations.hlo.pb.gz"));
    const hlo::Module text = hlo::read_module_file(source_path(dir + "after_optimizations.hlo.txt.gz"));
    CHECK(proto.format == "proto");
    CHECK(text.format == "text");
    CHECK(proto.name == text.name);
    CHECK(proto.computations.size() == text.computations.size());
    auto without_gte = [](const hlo::Computation& c) {
        std::vector<const hlo::Instruction*> out;
        for (const auto& i : c.instructions)
            if (i.opcode != hlo::Opcode::get_tuple_element) out.push_back(&i);
        return out;
    };
    const auto pe = without_gte(proto.entry_computation());
    const auto te = without_gte(text.entry_computation());
    REQUIRE(pe.size() == te.size());
    for (std::size_t i = 0; i < pe.size(); ++i) {
        CHECK(pe[i]->name == te[i]->name);
        CHECK(pe[i]->opcode == te[i]->opcode);
        CHECK(pe[i]->shape.bytes() == te[i]->shape.bytes());
        CHECK(pe[i]->operands.size() == te[i]->operands.size());
    }
    REQUIRE(proto.buffer_assignment);
    CHECK_FALSE(text.buffer_assignment);

    // The Pax step of JAX-Toolbox (4 x A100): async collective pairs and reduce-scatters wrapped in
    // async-start/done.
    const hlo::Module pax = hlo::read_module_file(source_path(
        "tests/data/jaxtoolbox__pax_fsdp4_proc0__module_0040.pjit__wrapped_step_fn.sm_8.0_gpu_after_"
        "optimizations.hlo.pb.gz"));
    int starts = 0, async_starts = 0;
    for (const auto& c : pax.computations)
        for (const auto& i : c.instructions) {
            starts += i.opcode == hlo::Opcode::all_gather_start || i.opcode == hlo::Opcode::all_reduce_start;
            async_starts += i.opcode == hlo::Opcode::async_start;
        }
    CHECK(starts == 19);
    CHECK(async_starts >= 4);
}
