#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include "report/format.hpp"
#include "support.hpp"

using namespace podsim;

namespace {
std::vector<std::string> example_configs() {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(test::source_path("configs"))) {
        if (e.path().extension() == ".yaml") out.push_back("configs/" + e.path().filename().string());
    }
    std::sort(out.begin(), out.end());
    return out;
}
}  // namespace

TEST_CASE("every example: 0 < MFU <= HFU <= 1, the breakdown adds up, output is deterministic") {
    for (const auto& path : example_configs()) {
        CAPTURE(path);
        auto spec = test::load_config(path);
        auto a = run::simulate(spec);
        const auto& r = a.report;
        CHECK(r.mfu > 0.0);
        CHECK(r.mfu <= r.hfu);
        CHECK(r.hfu <= 1.0);
        CHECK(r.compute_s + r.exposed_communication_s + r.host_s + r.pipeline_bubble_s + r.idle_s ==
              doctest::Approx(r.step_time_s));
        CHECK(r.idle_s >= 0.0);
        auto b = run::simulate(spec);
        CHECK(report::format_json(a.report) == report::format_json(b.report));
    }
}

TEST_CASE("more chips of pure data parallelism never reduce per-chip compute time") {
    // Per-chip batch fixed: each chip does the same work; only the gradient all-reduce changes (and
    // may even get faster on a larger torus, so step time is not monotonic).
    double previous_compute = 0;
    for (std::string slice : {"2x2x1", "2x2x2", "2x2x4", "4x4x4", "4x4x8"}) {
        CAPTURE(slice);
        auto spec = test::run_from_text(R"(
schema: podsim.run/v1
model: vit-b16
topology: tpu-v4
slice: )" + slice + R"(
mesh: {data: auto}
training: {per_chip_batch: 32, optimizer: adam}
)");
        auto r = run::simulate(spec).report;
        if (previous_compute > 0) CHECK(r.compute_s >= previous_compute * (1 - 1e-9));
        previous_compute = r.compute_s;
    }
}

TEST_CASE("async collectives are never slower than synchronous ones") {
    for (const auto& path : example_configs()) {
        CAPTURE(path);
        auto spec = test::load_config(path);
        spec.runtime.async_collectives = true;
        double async_step = run::simulate(spec).report.step_time_s;
        spec.runtime.async_collectives = false;
        double sync_step = run::simulate(spec).report.step_time_s;
        CHECK(async_step <= sync_step * (1 + 1e-9));
    }
}

TEST_CASE("remat full: less activation memory, more executed FLOPs, same model FLOPs") {
    auto spec = test::load_config("configs/default.yaml");
    spec.training.remat = workload::Remat::none;
    auto none = run::simulate(spec).report;
    spec.training.remat = workload::Remat::full;
    auto full = run::simulate(spec).report;
    CHECK(full.memory.activations_bytes < none.memory.activations_bytes);
    CHECK(full.hardware_flops_per_step > none.hardware_flops_per_step);
    CHECK(full.model_flops_per_step == none.model_flops_per_step);
    CHECK(full.recompute_s > 0.0);
    CHECK(none.recompute_s == 0.0);
}

TEST_CASE("more FSDP sharding means less parameter memory per chip") {
    double previous = 1e30;
    for (std::string slice : {"2x2x1", "2x2x2", "2x2x4"}) {
        auto spec = test::run_from_text(R"(
schema: podsim.run/v1
model: gpt2-2b
topology: tpu-v4
slice: )" + slice + R"(
mesh: {fsdp: auto}
training: {per_chip_batch: 8, seq_len: 1024, optimizer: adam, remat: full}
)");
        auto r = run::simulate(spec).report;
        CHECK(r.memory.params_bytes < previous);
        previous = r.memory.params_bytes;
    }
}

TEST_CASE("memory facts: what fits in 32 GiB of v4 HBM") {
    // GPT-2 2B FSDP on v4-8 ran in the PyTorch/XLA blog, so it fits.
    CHECK(test::simulate_config("configs/default.yaml").report.memory.fits);
    // MaxText 22B, per-chip batch 16, remat full, FSDP over 64 chips: the published config, fits.
    auto spec = test::load_config("configs/maxtext-22b-fsdp-v4-128.yaml");
    CHECK(run::simulate(spec).report.memory.fits);
    // The same model replicated (pure data parallelism): 22B params x (4 + 4 + 8) bytes = 350 GB per
    // chip of params, grads and Adam state; cannot fit. A result, not an error.
    spec.mesh.ici = {{"data", 64}};
    auto replicated = run::simulate(spec).report;
    CHECK_FALSE(replicated.memory.fits);
    CHECK(replicated.memory.overflow_bytes > 300e9);
}
