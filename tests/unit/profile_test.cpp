#include <doctest/doctest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <random>
#include <sstream>

#include <fmt/format.h>

#include "config/load.hpp"
#include "core/diagnostics.hpp"
#include "profile/compare.hpp"
#include "profile/measured_profile.hpp"
#include "report/format.hpp"
#include "run/simulate.hpp"
#include "support.hpp"

// Readers of measured profiles, on the real sample files (tests/data/README.md lists their origin).

using namespace podsim;
namespace fs = std::filesystem;

namespace {
std::string data(const std::string& name) {
    return test::source_path("tests/data/" + name);
}
const profile::MeasuredOp* find_op(const profile::MeasuredProfile& p, const std::string& name) {
    for (const auto& op : p.ops) {
        if (op.name == name) return &op;
    }
    return nullptr;
}
}  // namespace

TEST_CASE("XProf xplane.pb: the v6e all-reduce of 5 GiB, three times at about 121.7 ms") {
    auto p = profile::read_profile(data("xprof__tpu_inference_2.xplane.pb"));
    CHECK(p.format == "xplane");
    const auto* ar = find_op(p, "all-reduce");
    REQUIRE(ar != nullptr);
    CHECK(ar->category == "all-reduce");
    CHECK(ar->occurrences == 3);
    CHECK(ar->total_s / 3 == doctest::Approx(121.7e-3).epsilon(0.01));
    CHECK(p.category_s.count("copy"));  // host offload copy-start/done
    // The compiler's cost analysis travels with each op: an f32[5,1024,1024,256] fusion reads and
    // writes gigabytes.
    const auto* fusion = find_op(p, "broadcast_add_fusion");
    REQUIRE(fusion != nullptr);
    CHECK(fusion->bytes / static_cast<double>(fusion->occurrences) > 1e9);
}

TEST_CASE("PyTorch profiler trace (gzip): steps, NCCL all-reduce with its message size") {
    auto p = profile::read_profile(data("hta__nccl_data.json.gz"));
    CHECK(p.format == "chrome-trace");
    CHECK(p.steps == 3);  // ProfilerStep#4..#6
    CHECK(p.step_time_s > 0.2);
    CHECK(p.step_time_s < 0.23);
    CHECK(p.category_s.at("all-reduce") > 0);
    bool nccl = false;
    for (const auto& op : p.ops) {
        if (op.name.find("ncclKernel_AllReduce") != std::string::npos) {
            nccl = true;
            CHECK(op.category == "all-reduce");
            CHECK(op.bytes > 0);
        }
    }
    CHECK(nccl);
}

TEST_CASE("NVTX GPU projection: five training steps of 127 to 148 ms") {
    auto p = profile::read_profile(data("jaxtoolbox__pax_fsdp4_proc0__nvtx_gpu_proj_trace.csv.gz"));
    CHECK(p.steps == 5);
    CHECK(p.step_time_s > 0.127);
    CHECK(p.step_time_s < 0.148);
    CHECK(p.category_s.at("all-gather") > 0);
    CHECK(p.category_s.at("reduce-scatter") > 0);
}

TEST_CASE("pod viewer: eight all-reduces and the per-core step") {
    auto p = profile::read_profile(data("xprof__profile_demo.pod_viewer.json"));
    CHECK(p.format == "pod-viewer");
    CHECK(p.category_count.at("all-reduce") == 8);
    CHECK(p.step_time_s == doctest::Approx(0.3975).epsilon(0.01));
}

TEST_CASE("Chakra execution trace inside a tar.gz: GPU kernels and NCCL collectives") {
    auto p = profile::read_profile(data("chakra__feeder_tests_trace.tar.gz"));
    CHECK(p.format == "chakra-et");
    const profile::MeasuredOp* nccl = nullptr;
    for (const auto& op : p.ops) {
        if (op.name.rfind("ncclKernel_AllReduce", 0) == 0) nccl = &op;
    }
    REQUIRE(nccl != nullptr);
    CHECK(nccl->category == "all-reduce");
    CHECK(nccl->occurrences == 5);
    CHECK(nccl->bytes > 0);
    CHECK(p.category_s.at("matmul") > 0);  // cuDNN convolutions
}

TEST_CASE("HLO op stats CSV: categories from the table, times in us") {
    auto p = profile::read_profile(data("hlo_op_stats_example.csv"));
    CHECK(p.format == "hlo-op-stats");
    CHECK(p.category_s.at("matmul") == doctest::Approx(0.096));
    CHECK(p.category_s.at("fusion") == doctest::Approx(0.040));
    CHECK(p.category_s.at("all-reduce") == doctest::Approx(0.024));
    CHECK(p.category_s.at("copy") == doctest::Approx(0.010));
}

TEST_CASE("PyTorch/XLA metrics: a graph compiled every step is flagged, a cached one is not") {
    auto bad = profile::read_profile(data("pytorch_xla_metrics_recompiling.txt"));
    CHECK(bad.steps == 20);
    CHECK(bad.step_time_s == doctest::Approx(82.4 / 20));
    REQUIRE(bad.notes.size() == 1);
    CHECK(bad.notes[0].find("compiles every step") != std::string::npos);
    auto good = profile::read_profile(data("pytorch_xla_metrics_stable.txt"));
    CHECK(good.notes.empty());
    CHECK(good.step_time_s == doctest::Approx(209.55 / 50));
}

TEST_CASE("podsim's own trace reads back as the prediction it came from") {
    auto spec = test::load_config("configs/maxtext-22b-fsdp-v4-128.yaml");
    auto sim = run::simulate(spec);
    const fs::path dir = test::fresh_dir("trace");
    fs::create_directories(dir);
    fs::path trace = dir / "trace.json";
    std::ofstream(trace) << report::chrome_trace("t", sim.program, sim.timeline, sim.memory);
    auto p = profile::read_profile(trace.string());
    for (const auto& s : sim.report.op_stats) {
        if (s.category == "host") continue;
        CAPTURE(s.category);
        CHECK(p.category_s.at(s.category) == doctest::Approx(s.time_s).epsilon(1e-6));
    }
    auto c = profile::compare(sim.report, p, spec.topology.chip.mxu_tile);
    for (const auto& row : c.categories) {
        if (row.category != "host") CHECK(std::fabs(row.error) < 1e-6);
    }
    // The trace carries each matmul's narrowest dimension, so matmuls compare by shape class too:
    // MaxText's projections are large (d_model 6144), its attention medium (head_dim 256 = 2 tiles).
    REQUIRE(c.matmul_shapes.size() == 2);
    CHECK(c.matmul_shapes[0].category == "large");
    CHECK(c.matmul_shapes[1].category == "medium");
    for (const auto& row : c.matmul_shapes) CHECK(std::fabs(row.error) < 1e-6);
}

TEST_CASE("truncated and corrupted profiles are errors with the file, never a crash") {
    std::mt19937 random(7);
    for (const char* name :
         {"xprof__tpu_inference_2.xplane.pb", "hta__nccl_data.json.gz", "xprof__profile_demo.pod_viewer.json",
          "hlo_op_stats_example.csv", "jaxtoolbox__pax_fsdp4_proc0__nvtx_gpu_proj_trace.csv.gz",
          "pytorch_xla_metrics_recompiling.txt"}) {
        CAPTURE(name);
        std::ifstream in(data(name), std::ios::binary);
        std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        fs::path tmp = fs::temp_directory_path() / fmt::format("podsim-profile-{}", ::getpid());
        auto survives = [&](const std::string& content) {
            std::ofstream(tmp, std::ios::binary | std::ios::trunc) << content;
            try {
                profile::read_profile(tmp.string());
            } catch (const core::UserError& e) {
                return e.diagnostics().items().front().location.file == tmp.string();
            } catch (...) {
                return false;
            }
            return true;
        };
        for (int i = 1; i <= 8; ++i)
            CHECK(survives(bytes.substr(0, bytes.size() * static_cast<std::size_t>(i) / 9)));
        for (int i = 0; i < 8; ++i) {
            std::string mutated = bytes;
            for (int k = 0; k < 4; ++k)
                mutated[random() % mutated.size()] = static_cast<char>(random() % 256);
            CHECK(survives(mutated));
        }
        fs::remove(tmp);
    }
    CHECK_THROWS_AS(profile::read_profile(data("does-not-exist.json")), core::UserError);
}

TEST_CASE("a matmul's narrowest dimension from its HLO text and FLOPs") {
    // bf16[8192,3072] = [8192,768] x [768,3072]: FLOPs 2*8192*3072*768 give k = 768.
    CHECK(profile::matmul_narrowest_dim(
              "%fusion.3 = bf16[8192,3072]{1,0:T(8,128)(2,1)} fusion(bf16[8192,768]{1,0} %p0, ...)",
              2.0 * 8192 * 3072 * 768) == doctest::Approx(768));
    // Leading dimensions are batch: [16,1024,1024] from head_dim 128 gives k = 128.
    CHECK(profile::matmul_narrowest_dim("%dot.1 = f32[16,1024,1024]{2,1,0} dot(...)",
                                        2.0 * 16 * 1024 * 1024 * 128) == doctest::Approx(128));
    CHECK(profile::matmul_narrowest_dim("%t = (f32[8,8], f32[8]) tuple(...)", 1e6) == 0.0);
    CHECK(profile::matmul_narrowest_dim("%c = f32[] constant(0)", 1e6) == 0.0);
    CHECK(profile::matmul_narrowest_dim("%x = bf16[128,128]{1,0} fusion(...)", 0.0) == 0.0);
    CHECK(profile::matmul_narrowest_dim("no shape here", 1e9) == 0.0);
}

TEST_CASE("a compiled XLA module: the buffer assignment's memory per device, by what it holds") {
    // Pax GPT, FSDP over 4 A100s, one device's program (tests/data/README.md). Sums of its
    // BufferAllocationProto sizes by kind, checked against a separate decoding of the same file.
    const std::string file = data(
        "jaxtoolbox__pax_fsdp4_proc0__module_0040.pjit__wrapped_step_fn.sm_8.0_gpu_after_optimizations.hlo."
        "pb.gz");
    auto p = profile::read_profile(file);
    CHECK(p.format == "hlo-proto");
    CHECK(p.device == "gpu");
    CHECK(p.step_time_s == 0.0);
    CHECK(p.category_s.empty());
    REQUIRE(p.xla_memory);
    const auto& m = *p.xla_memory;
    CHECK(m.module == "pjit__wrapped_step_fn");
    CHECK(m.allocations == 1323);
    CHECK(m.parameter_bytes == 376'927'268.0);
    CHECK(m.temp_bytes == 16'384'178'784.0);
    CHECK(m.output_bytes == 137'306.0);
    CHECK(m.constant_bytes == 8.0);
    // The suite's two cases quote these numbers: they must not drift from the file.
    int quoted = 0;
    std::optional<run::RunSpec> spec;
    for (const auto& c : config::load_validation_suite(test::source_path("tests/validation"))) {
        if (auto it = c.measured.find("xla_peak_bytes"); it != c.measured.end()) {
            CHECK(it->second == m.total_bytes());
            spec = c.run;
            ++quoted;
        }
        if (auto it = c.measured.find("xla_parameter_bytes"); it != c.measured.end()) {
            CHECK(it->second == m.parameter_bytes);
            ++quoted;
        }
    }
    CHECK(quoted == 2);

    // Compared with a prediction: memory rows, no time categories (the module has no timings).
    REQUIRE(spec);
    auto report = run::simulate(*spec).report;
    auto c = profile::compare(report, p, 128);
    CHECK(c.has_memory);
    CHECK(c.categories.empty());
    CHECK(c.measured_peak_bytes == m.total_bytes());
    CHECK(c.predicted_peak_bytes == report.memory.peak_bytes);
    CHECK(c.predicted_state_bytes == report.memory.params_bytes + report.memory.optimizer_bytes);
    const std::string text = profile::format_comparison(c);
    CHECK(text.find("memory per device (XLA buffer assignment)") != std::string::npos);
    CHECK(text.find("by op category") == std::string::npos);
    CHECK(profile::comparison_json(c).find("\"xla_peak_bytes\": 16761243366") != std::string::npos);
}

TEST_CASE("a compiled XLA module: broken or without a buffer assignment, a clear error") {
    const std::string dir = (fs::temp_directory_path() / fmt::format("podsim-hlo-{}", ::getpid())).string();
    fs::create_directories(dir);
    auto message_of = [&](const std::string& name, const std::string& bytes) {
        std::ofstream(dir + "/" + name, std::ios::binary) << bytes;
        try {
            profile::read_profile(dir + "/" + name);
        } catch (const core::UserError& e) {
            return std::string(e.what());
        }
        return std::string("no error");
    };
    // hlo_module only (field 1, "m"): no buffer assignment.
    CHECK(message_of("module.hlo.pb", std::string("\x0a\x03\x0a\x01m", 5))
              .find("without a buffer assignment") != std::string::npos);
    // A buffer assignment whose length runs past the end of the file.
    CHECK(message_of("cut.hlo.pb", std::string("\x1a\x40\x1a\x02", 4)).find("runs past the end") !=
          std::string::npos);
    fs::remove_all(dir);
}

TEST_CASE("XLA's memory_analysis() from JSON lines: the peak, the grant and whether the step ran") {
    // tests/data/xla-truth/gpu.jsonl, written by tools/xla_truth.py: one entry per compiled step.
    const std::string file = test::source_path("tests/data/xla-truth/gpu.jsonl");
    const auto ran = profile::read_profile(file + "#1b-b8-none-flash");
    REQUIRE(ran.xla_memory);
    CHECK(ran.format == "xla-memory-analysis");
    CHECK(ran.device == "gpu");
    CHECK(ran.xla_memory->peak() == 50'732'687'964.0);  // peak_memory_in_bytes
    CHECK(ran.xla_memory->parameter_bytes == 11'438'743'556.0);
    CHECK(ran.xla_memory->bytes_limit == 142'606'336'000.0);
    CHECK(ran.xla_memory->ran == std::optional<bool>(true));
    const auto oom = profile::read_profile(file + "#7b-b4-minimal-flash");
    CHECK(oom.xla_memory->ran == std::optional<bool>(false));
    // XLA:CPU leaves the temporaries out of its peak: arguments + temporaries + outputs not aliased
    // (715,694,084 + 23,394,297,328 + 308), as the file's README says.
    const auto spmd =
        profile::read_profile(test::source_path("tests/data/xla-truth/spmd.jsonl") + "#spmd-1b-fsdp16-none");
    CHECK(spmd.device == "cpu");
    CHECK(spmd.xla_memory->peak() == 715'694'084.0 + 23'394'297'328.0 + 308.0);
    CHECK_FALSE(spmd.xla_memory->ran.has_value());
    // A name the file does not have: an error that lists the ones it has.
    try {
        profile::read_profile(file + "#1b-b8-nonsense");
        FAIL("no error");
    } catch (const core::UserError& e) {
        const std::string message = e.diagnostics().items().front().message;
        CHECK(message.find("no entry named '1b-b8-nonsense'") != std::string::npos);
        CHECK(message.find("1b-b8-none-flash") != std::string::npos);
    }
    // No name at all: read as a Chrome trace, it was "no traceEvents: not a Chrome trace".
    try {
        profile::read_profile(file);
        FAIL("no error");
    } catch (const core::UserError& e) {
        const std::string message = e.diagnostics().items().front().message;
        CHECK(message.find("name one as " + file + "#NAME") != std::string::npos);
        CHECK(message.find("1b-b8-none-flash") != std::string::npos);
    }
}

namespace {

std::string replaced(std::string text, const std::string& from, const std::string& to) {
    const auto at = text.find(from);
    REQUIRE(at != std::string::npos);
    return text.replace(at, from.size(), to);
}

}  // namespace

TEST_CASE(
    "XLA's memory_analysis() JSON lines with wrong types or sizes: an error at the line, never a crash") {
    // A name, device or status that is no string threw nlohmann's type_error (exit 134); a byte
    // count of 1e300 or -5 went into the comparison (inf GiB, -nan%), a bytes_limit of "x" was
    // dropped silently.
    const fs::path dir = test::fresh_dir("xla-jsonl");
    fs::create_directories(dir);
    const std::string good =
        R"("memory_analysis": {"argument_size_in_bytes": 100, "temp_size_in_bytes": 200, )"
        R"("output_size_in_bytes": 100, "alias_size_in_bytes": 100, "host_temp_size_in_bytes": 0, )"
        R"("peak_memory_in_bytes": 300})";
    const std::pair<std::string, std::string> cases[] = {
        {R"({"name": 5})", ":2:1: error: name: expected a string, found 5"},
        {R"({"name": "e", "device": 7, )" + good + "}", ":2:1: error: device: expected a string, found 7"},
        {R"({"name": "e", "status": [1], )" + good + "}",
         ":2:1: error: status: expected a string, found [1]"},
        {R"({"name": "e", )" + replaced(good, "300}", "1e300}") + "}",
         ":2:1: error: memory_analysis.peak_memory_in_bytes: entry e: 1e+300 is no byte count"},
        {R"({"name": "e", )" + replaced(good, "\"temp_size_in_bytes\": 200", "\"temp_size_in_bytes\": -5") +
             "}",
         ":2:1: error: memory_analysis.temp_size_in_bytes: entry e: -5 is no byte count"},
        {R"({"name": "e", )" + replaced(good, "200", "\"200\"") + "}",
         ":2:1: error: memory_analysis.temp_size_in_bytes: entry e: expected a number, found \"200\""},
        {R"({"name": "e", "bytes_limit": "x", )" + good + "}",
         ":2:1: error: bytes_limit: entry e: \"x\" is no byte count"},
        {R"({"name": "e", "bytes_limit": 0, )" + good + "}",
         ":2:1: error: bytes_limit: entry e: 0 is no byte count"},
        {R"({"name": "e", "memory_analysis": [1]})",
         ":2:1: error: memory_analysis: entry e has no memory_analysis object"},
        {R"({"name": "e", )", ":2:1: error: not a JSON object"},
    };
    for (const auto& c : cases) {
        const std::string& line = c.first;  // (clang 14 cannot capture structured bindings)
        const std::string& expected = c.second;
        CAPTURE(line);
        std::ofstream(dir / "x.jsonl") << R"({"name": "other", "device": "NVIDIA H200", )" << good << "}\n"
                                       << line << "\n";
        try {
            profile::read_profile((dir / "x.jsonl").string() + "#e");
            FAIL("no error");
        } catch (const core::UserError& e) {
            CHECK(e.diagnostics().to_string().find("x.jsonl" + expected) != std::string::npos);
        }
    }
    // The same entry, well formed, reads.
    std::ofstream(dir / "x.jsonl") << R"({"name": "e", "bytes_limit": null, )" << good << "}\n";
    CHECK(profile::read_profile((dir / "x.jsonl").string() + "#e").xla_memory->peak() == 300.0);
}
