// Invariants of the simulator on random valid configs (seeded: every run draws the same configs).
// A config the loader rejects (a mesh that does not divide, a batch that does not shard) is drawn
// again; every accepted one must satisfy all of the checks below.
#include <doctest/doctest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "core/diagnostics.hpp"
#include "support.hpp"

using namespace podsim;

namespace {

struct Drawn {
    std::string yaml;
    int per_chip_batch = 1;
};

template <typename T>
const T& pick(std::mt19937& rng, const std::vector<T>& from) {
    return from[std::uniform_int_distribution<std::size_t>(0, from.size() - 1)(rng)];
}

std::string config_yaml(const std::string& model, const std::string& slice, const std::string& mesh,
                        int per_chip_batch, int seq_len, const std::string& remat,
                        const std::string& framework, const std::string& optimizer) {
    return fmt::format(
        "schema: podsim.run/v1\nmodel: {}\ntopology: tpu-v4\nslice: {}\nmesh: {}\n"
        "training: {{per_chip_batch: {}, seq_len: {}, remat: {}, optimizer: {}}}\nruntime: {{framework: "
        "{}}}\n",
        model, slice, mesh, per_chip_batch, seq_len, remat, optimizer, framework);
}

// Random valid configs: GPT-2 and Llama sizes on v4 slices of 4 to 64 chips, data / FSDP / tensor
// meshes, batch, sequence, remat, optimizer and framework.
std::vector<run::RunSpec> draw_configs(std::mt19937& rng, int count, std::vector<std::string>& texts) {
    const std::vector<std::string> models = {"gpt2-small", "gpt2-medium", "gpt2-large", "gpt2-xl",
                                             "llama2-7b"};
    const std::vector<std::pair<std::string, int>> slices = {
        {"2x2x1", 4}, {"2x2x2", 8}, {"2x2x4", 16}, {"4x4x4", 64}};
    const std::vector<std::string> remats = {"none", "full"};
    const std::vector<std::string> frameworks = {"jax", "pytorch-xla"};
    const std::vector<std::string> optimizers = {"adamw", "adafactor", "sgd"};
    std::vector<run::RunSpec> out;
    for (int attempt = 0; attempt < 20 * count && static_cast<int>(out.size()) < count; ++attempt) {
        const auto& [slice, chips] = pick(rng, slices);
        const int tensor = pick(rng, std::vector<int>{1, 2, 4});
        const std::string axis = pick(rng, std::vector<std::string>{"data", "fsdp"});
        const std::string mesh = tensor == 1
                                     ? fmt::format("{{{}: {}}}", axis, chips)
                                     : fmt::format("{{{}: {}, tensor: {}}}", axis, chips / tensor, tensor);
        const std::string text =
            config_yaml(pick(rng, models), slice, mesh, pick(rng, std::vector<int>{1, 2, 4, 8}),
                        pick(rng, std::vector<int>{256, 512, 1024}), pick(rng, remats), pick(rng, frameworks),
                        pick(rng, optimizers));
        try {
            out.push_back(test::run_from_text(text));
            texts.push_back(text);
        } catch (const core::UserError&) {
        }
    }
    return out;
}

}  // namespace

TEST_CASE("random valid configs: finite positive step, MFU and HFU in [0, 1], the breakdown adds up") {
    std::mt19937 rng(20261123);
    std::vector<std::string> texts;
    auto specs = draw_configs(rng, 24, texts);
    REQUIRE(specs.size() == 24);
    for (std::size_t i = 0; i < specs.size(); ++i) {
        INFO(texts[i]);
        const auto r = run::simulate(specs[i]).report;
        CHECK(std::isfinite(r.step_time_s));
        CHECK(r.step_time_s > 0.0);
        CHECK(r.mfu >= 0.0);
        CHECK(r.mfu <= 1.0);
        CHECK(r.hfu >= r.mfu);  // executed FLOPs include recomputation
        CHECK(r.hfu <= 1.0);
        // Every instant of the step is compute, exposed communication, host or idle, exactly once
        // (build_report measures them as disjoint unions of the timeline's spans).
        CHECK(r.compute_s + r.exposed_communication_s + r.host_s + r.pipeline_bubble_s + r.idle_s ==
              doctest::Approx(r.step_time_s).epsilon(1e-9));
        CHECK(r.overlapped_communication_s <= r.communication_s + 1e-12);
        CHECK(r.memory.peak_bytes > 0.0);
    }
}

TEST_CASE("random valid configs: memory grows with the batch, more bandwidth is never slower") {
    std::mt19937 rng(7);
    std::vector<std::string> texts;
    auto specs = draw_configs(rng, 16, texts);
    REQUIRE(specs.size() == 16);
    for (std::size_t i = 0; i < specs.size(); ++i) {
        INFO(texts[i]);
        const auto& spec = specs[i];
        const auto base = run::simulate(spec).report;

        // Twice the batch, same everything else: per-chip memory can only grow (activations).
        auto doubled = spec;
        doubled.training.global_batch *= 2;
        if (run::semantic_errors(doubled).empty())
            CHECK(run::simulate(doubled).report.memory.peak_bytes >= base.memory.peak_bytes);

        // Twice the ICI link bandwidth, or twice the HBM bandwidth: the step cannot get longer.
        auto faster_ici = spec;
        faster_ici.topology.ici.link_bandwidth *= 2.0;
        CHECK(run::simulate(faster_ici).report.step_time_s <= base.step_time_s * (1.0 + 1e-9));
        auto faster_hbm = spec;
        faster_hbm.topology.chip.hbm_bandwidth *= 2.0;
        CHECK(run::simulate(faster_hbm).report.step_time_s <= base.step_time_s * (1.0 + 1e-9));
    }
}
