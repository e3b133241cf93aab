// Bounded work and checked arithmetic: limits that turn hostile or unlucky input into a
// clear error instead of a crash, a hang or a wrong number.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "config/load.hpp"
#include "core/bounded_file.hpp"
#include "core/diagnostics.hpp"
#include "core/engine.hpp"
#include "core/quantity.hpp"
#include "core/time.hpp"
#include "sweep/expression.hpp"
#include "sweep/sweep_runner.hpp"
#include "sweep/sweep_runner_ranking.hpp"

using namespace podsim;

namespace {

struct Nothing final : core::EventHandler {
    void on_event(core::Time, std::uint64_t) override {}
};

std::filesystem::path fresh_dir(const std::string& name) {
    auto dir =
        std::filesystem::temp_directory_path() / ("podsim-bounds-" + name + "-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    return dir;
}

}  // namespace

TEST_CASE("durations beyond int64 picoseconds are an overflow error, not undefined behaviour") {
    // 2^63 ps = 9223372.036854775808 s, about 106.75 days.
    CHECK(core::from_seconds(9e6) == 9'000'000 * core::kSecond);
    CHECK_THROWS_AS(core::from_seconds(1e7), core::TimeOverflow);
    CHECK_THROWS_AS(core::from_seconds(1e300), core::TimeOverflow);
    CHECK_THROWS_AS(core::from_seconds(std::numeric_limits<double>::infinity()), core::TimeOverflow);
    CHECK_THROWS_AS(core::from_seconds(std::nan("")), core::TimeOverflow);
    CHECK(core::from_seconds(-1.0) == 0);
}

TEST_CASE("the engine refuses to schedule past the end of representable time") {
    core::Engine engine;
    Nothing handler;
    engine.schedule_after(core::kMaxTime - 10, handler, 0);
    engine.run();
    CHECK(engine.now() == core::kMaxTime - 10);
    CHECK_NOTHROW(engine.schedule_after(10, handler, 0));
    CHECK_THROWS_AS(engine.schedule_after(11, handler, 0), core::TimeOverflow);
}

TEST_CASE("files are read only when regular and within their limit") {
    auto dir = fresh_dir("files");
    { std::ofstream(dir / "small.txt") << "0123456789"; }
    auto ok = core::read_regular_file((dir / "small.txt").string(), 10);
    CHECK(ok.error.empty());
    CHECK(ok.bytes == "0123456789");

    auto big = core::read_regular_file((dir / "small.txt").string(), 9);
    CHECK(big.error == "file is 10 bytes; the limit for this kind of file is 9 bytes");

    // /dev/zero never ends; a FIFO would block until a writer comes.
    auto zero = core::read_regular_file("/dev/zero", 1 << 20);
    CHECK(zero.error.find("is a character device, not a regular file") != std::string::npos);
    REQUIRE(::mkfifo((dir / "fifo").c_str(), 0600) == 0);
    auto fifo = core::read_regular_file((dir / "fifo").string(), 1 << 20);
    CHECK(fifo.error.find("is a FIFO (named pipe), not a regular file") != std::string::npos);
    CHECK(core::read_regular_file(dir.string(), 1 << 20).error.find("is a directory") != std::string::npos);
    CHECK(core::read_regular_file((dir / "missing").string(), 1).error == "no such file");
    CHECK(core::format_byte_limit(16u << 20) == "16 MiB");
    std::filesystem::remove_all(dir);
}

TEST_CASE("keep expressions are bounded in nesting and length, and long chains stay flat") {
    std::string error;
    // 100,000 `!` overflowed the stack of the recursive parser.
    CHECK_FALSE(sweep::parse_row_expression(std::string(5000, '!') + "fits", error));
    CHECK(error == "nested more than 64 levels deep");
    CHECK_FALSE(sweep::parse_row_expression(std::string(100, '(') + "fits" + std::string(100, ')'), error));
    CHECK(error == "nested more than 64 levels deep");
    CHECK(sweep::parse_row_expression(std::string(64, '(') + "fits" + std::string(64, ')'), error));

    // 600 `and` terms (8,400 characters): one flat node, evaluated without deep recursion.
    std::string chain = "fits";
    for (int i = 0; i < 599; ++i) chain += " and mfu > 0.1";
    auto e = sweep::parse_row_expression(chain, error);
    REQUIRE(e);
    report::RunReport report;
    report.memory.fits = true;
    report.mfu = 0.2;
    sweep::Row r;
    r.set_report(report);
    CHECK(e->evaluate(r.numbers));
    report.mfu = 0.05;
    r.set_report(report);
    CHECK_FALSE(e->evaluate(r.numbers));

    std::string huge = "fits";
    for (int i = 0; i < 200'000; ++i) huge += " and fits";
    CHECK_FALSE(sweep::parse_row_expression(huge, error));
    CHECK(error.find("the limit is 10000") != std::string::npos);
    CHECK(sweep::parse_row_expression("not not fits or !(mfu < 0.5)", error));
}

TEST_CASE("quantities that overflow once converted to base units are rejected") {
    // 1e300 TB/s = 1e312 B/s: infinite bandwidth made the flow network assert.
    auto bandwidth = core::parse_quantity("1e300 TB/s", core::Dimension::bandwidth);
    CHECK_FALSE(bandwidth.ok);
    CHECK(bandwidth.error ==
          "'1e300 TB/s' is out of range: it is not a finite number once converted to bytes per second");
    CHECK_FALSE(core::parse_quantity("1e300 TiB", core::Dimension::bytes).ok);
    CHECK(core::parse_quantity("1e300 B", core::Dimension::bytes).ok);
}

namespace {

std::string config_error(const std::string& yaml) {
    try {
        (void)config::load_run_text(yaml, "t.yaml", std::string(PODSIM_SOURCE_DIR) + "/configs");
    } catch (const core::UserError& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE("size limits: chips per slice and layer passes per step") {
    // 256x256x256 exhausted memory; 65536x65536 divided by zero while filling `auto`.
    const std::string topology =
        "topology: {schema: podsim.topology/v1, name: big, chip: {peak_flops: {bf16: 275 TFLOP/s}, "
        "hbm_capacity: "
        "32 GiB, hbm_bandwidth: 1200 GB/s}, ici: {dims: 2, link_bandwidth: 45 GB/s, hop_latency: 1 us, "
        "max_slice: "
        "65536x65536}}\n";
    auto error = config_error(
        "schema: podsim.run/v1\nmodel: gpt2-small\n" + topology +
        "slice: 65536x65536\nmesh: {data: auto}\ntraining: {global_batch: 1024, seq_len: 1024}\n");
    // The slice key's declared bound (topology_keys.hpp: 65,536 chips).
    CHECK(error.find("slice: must be at most 65536 chips, found 4294967296") != std::string::npos);
    // 100,000 layers took 3 GB and 13 s. Layers alone are bounded by their key (1024); layers times
    // microbatches by the layer-pass bound.
    error = config_error(
        "schema: podsim.run/v1\nmodel: {schema: podsim.model/v1, name: deep, family: gpt2, layers: 1000, "
        "d_model: "
        "256, heads: 4, vocab: 1000, max_positions: 128}\ntopology: tpu-v4\nslice: 2x2x1\nmesh: {fsdp: 4}\n"
        "training: {global_batch: 64, seq_len: 128, microbatches: 32}\n");
    CHECK(error.find("model.layers: 1000 layers x 32 microbatches = 32000 layer passes per step; podsim "
                     "simulates at most 20000") != std::string::npos);
}

TEST_CASE("config mistakes that read badly: a tab, a topology without its prefix") {
    auto tab = config_error(
        "schema: podsim.run/v1\nmodel: gpt2-small\ntopology: tpu-v4\nslice: 2x2x1\n"
        "training:\n\tglobal_batch: 8\n");
    CHECK(tab.find("t.yaml:6:1: error: a tab in the indentation: YAML indents with spaces only") !=
          std::string::npos);
    auto v4 = config_error(
        "schema: podsim.run/v1\nmodel: gpt2-small\ntopology: v4\nslice: 2x2x1\nmesh: {fsdp: 4}\n"
        "training: {global_batch: 8, seq_len: 128}\n");
    CHECK(v4.find("unknown topology 'v4': no topologies/v4.yaml (did you mean 'tpu-v4'?)") !=
          std::string::npos);
}
