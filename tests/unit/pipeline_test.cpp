#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include <fmt/format.h>

#include "memory/memory_profile.hpp"
#include "parallel/pipeline_schedule.hpp"
#include "run/stages.hpp"
#include "support.hpp"

// Pipeline parallelism: stages as programs of their own, MaxText's GPipe and circular schedules.
// The checks use a model whose parts outside the pipeline are negligible (a 256-token vocabulary), a
// mesh with nothing but the pipeline axis and TPU v4 chips whose ICI links are 1000x as fast (so
// that handing activations from stage to stage costs next to nothing), so that the stages take the
// same time and the closed forms apply: bubble = (stages - 1) / (repeats x microbatches + stages - 1)
// of the pipelined time (GPipe, Huang et al. 2019; MaxText configs/base.yml for the circular
// schedule).

using namespace podsim;

namespace {

std::string uniform_model(int layers) {
    return fmt::format(
        R"({{schema: podsim.model/v1, name: uniform, family: decoder, layers: {}, d_model: 2048,
  heads: 16, d_ff: 8192, activation: swiglu, vocab: 256, tied_embeddings: false, bias: false}})",
        layers);
}

// tpu-v4 with 1000x the link bandwidth, as a file of this test process.
std::string fast_links_topology() {
    static const std::string path = [] {
        std::string text = test::read_text(test::source_path("topologies/tpu-v4.yaml"));
        const std::string rate = "link_bandwidth: {value: 45 GB/s";
        text.replace(text.find(rate), rate.size(), "link_bandwidth: {value: 45000 GB/s");
        const auto dir = test::fresh_dir("pipeline");
        std::filesystem::create_directories(dir);
        const auto file = dir / "tpu-v4-fast-links.yaml";
        std::ofstream(file) << text;
        return file.string();
    }();
    return path;
}

run::Simulation pipelined(int layers, int stages, int microbatches, int layers_per_stage,
                          const std::string& extra = "", const std::string& mesh = "",
                          const std::string& topology = fast_links_topology()) {
    const std::string axes = mesh.empty() ? fmt::format("{{pipeline: {}}}", stages) : mesh;
    return run::simulate(
        test::run_from_text(fmt::format(R"(
schema: podsim.run/v1
model: {}
topology: {}
slice: {}
mesh: {}
training: {{global_batch: {}, seq_len: 2048, optimizer: adamw, remat: full,
  num_pipeline_microbatches: {}, num_layers_per_pipeline_stage: {}{}}}
)",
                                        uniform_model(layers), topology, stages == 8 ? "2x2x2" : "2x2x1",
                                        axes, microbatches * 2, microbatches, layers_per_stage, extra)));
}

// Compute time of the layers (the pipelined part) on one stage.
double layer_compute_s(const run::Simulation& sim, int stage) {
    const run::StageView v = run::stage_view(sim.program, sim.costs, sim.timeline, stage);
    core::Time t = 0;
    for (std::size_t i = 0; i < v.program.ops.size(); ++i) {
        const auto& op = v.program.ops[i];
        if (op.layer < 0 || op.phase == workload::Phase::optimizer) continue;
        if (op.category != parallel::OpCategory::matmul && op.category != parallel::OpCategory::fusion)
            continue;
        t += v.timeline.spans[i].end - v.timeline.spans[i].start;
    }
    return core::to_seconds(t);
}

}  // namespace

TEST_CASE("GPipe and circular: the simulated bubble is the closed form within 1%") {
    struct Case {
        int layers, stages, microbatches, layers_per_stage;
    };
    for (Case c : {Case{8, 4, 4, 2}, Case{8, 4, 8, 2}, Case{8, 4, 16, 2}, Case{16, 4, 8, 1},
                   Case{16, 4, 4, 2}, Case{16, 8, 8, 1}}) {
        CAPTURE(c.layers);
        CAPTURE(c.stages);
        CAPTURE(c.microbatches);
        CAPTURE(c.layers_per_stage);
        const auto sim = pipelined(c.layers, c.stages, c.microbatches, c.layers_per_stage);
        const auto& r = sim.report;
        const int repeats = c.layers / (c.stages * c.layers_per_stage);
        CHECK(r.pipeline_schedule == (repeats > 1 ? "circular" : "gpipe"));
        const double closed = (c.stages - 1.0) / (repeats * c.microbatches + c.stages - 1.0);
        CHECK(r.pipeline_bubble_closed_form == doctest::Approx(closed));
        // The pipelined time of the reported stage: its layers' compute and its bubble.
        const double pipelined_s = layer_compute_s(sim, r.time_stage) + r.pipeline_bubble_s;
        MESSAGE(fmt::format("{} {} {} {}: {:.5f} vs {:.5f}", c.layers, c.stages, c.microbatches,
                            c.layers_per_stage, r.pipeline_bubble_s / pipelined_s, closed));
        CHECK(std::abs(r.pipeline_bubble_s / pipelined_s / closed - 1.0) < 0.01);
    }
}

TEST_CASE("per-stage memory holds the activations in flight, as counted by hand") {
    // Remat full, no data-parallel axes: a stage keeps, for each of its microbatches and chunks, each
    // of its layers' outputs (the next layer's input) and the input it received from the stage before
    // (stage 0 receives from the last stage from the second repeat on), until the backward reaches
    // them; every stage also keeps its share's embedding output. While its last forward op (the last
    // layer's MLP down-projection) runs, it also holds that op's input, the MLP's hidden activation
    // (S x d_ff); nothing else is live (no gathered weights, no other temporaries).
    // MaxText's loop adds (layers/pipeline.py): stage s has computed s iterations on padding before
    // its first microbatch, each keeping what a microbatch's iteration keeps; with the circular
    // schedule and more microbatches than stages, circ_storage holds a stage input per microbatch.
    struct Case {
        int layers, microbatches;
    };
    const int stages = 4, per_stage = 2;
    for (const Case c : {Case{8, 8}, Case{16, 8}}) {  // GPipe; circular over 2 repeats
        CAPTURE(c.layers);
        const int microbatches = c.microbatches;
        const double repeats = c.layers / (stages * per_stage);
        const auto sim = pipelined(c.layers, stages, microbatches, per_stage);
        const double d = 2048, d_ff = 8192, seq = 2048, bf16 = 2;
        const double samples_per_microbatch = 2;  // global batch 2 x microbatches
        const double activation = samples_per_microbatch * seq * d * bf16;
        const double hidden = samples_per_microbatch * seq * d_ff * bf16;
        const double embedding = (2.0 * microbatches / stages) * seq * d * bf16;
        const double circ_storage = repeats > 1 && microbatches > stages ? microbatches * activation : 0.0;
        std::vector<run::StageView> views = run::stage_views(sim.program, sim.costs, sim.timeline, true);
        run::add_pipeline_loop_buffers(
            views, parallel::PipelineSchedule{stages, microbatches, per_stage, static_cast<int>(repeats)},
            activation);
        for (int stage = 0; stage < stages; ++stage) {
            CAPTURE(stage);
            const run::StageView& v = views[static_cast<std::size_t>(stage)];
            const auto profile = memory::profile_memory(v.program, v.timeline, 32.0 * (1 << 30));
            core::Time last_forward_start = 0;
            for (std::size_t i = 0; i < v.program.ops.size(); ++i)
                if (v.program.ops[i].layer >= 0 && v.program.ops[i].phase == workload::Phase::forward &&
                    !v.program.ops[i].continuation && !parallel::is_collective(v.program.ops[i].category))
                    last_forward_start = std::max(last_forward_start, v.timeline.spans[i].start);
            double live = 0.0;  // once the last forward op has started (its output allocated)
            for (const auto& sample : profile.samples)
                if (sample.time <= last_forward_start) live = sample.live_bytes;
            // The gradients come with the backward (the scanned layers' accumulators), after this point.
            const double fixed = v.program.params_bytes + v.program.optimizer_bytes;
            const double received = (stage == 0 ? repeats - 1 : repeats) * microbatches * activation;
            const double per_iteration = (per_stage + (stage > 0 || repeats > 1 ? 1 : 0)) * activation;
            const double expected = repeats * microbatches * per_stage * activation + received + embedding +
                                    hidden + stage * per_iteration + circ_storage;
            CHECK(live - fixed == doctest::Approx(expected));
            // All stages-1 padding iterations: s before the first microbatch, the rest after the last.
            double padding = 0.0, storage = 0.0;
            for (const auto& op : v.program.ops) {
                if (op.name.starts_with("pipeline.padding_iterations")) padding += op.saved_bytes;
                if (op.name.starts_with("pipeline.circ_storage")) storage += op.saved_bytes;
            }
            CHECK(padding == doctest::Approx((stages - 1) * per_iteration));
            CHECK(storage == doctest::Approx(2 * circ_storage));  // the forward's and its gradient
            // The report shows the stage with the highest peak, and every stage's peak.
            CHECK(sim.report.stage_peak_bytes[static_cast<std::size_t>(stage)] <=
                  sim.report.memory.peak_bytes);
            CHECK(sim.report.stage_peak_bytes[static_cast<std::size_t>(stage)] == profile.peak_bytes);
        }
    }
}

TEST_CASE("property: more microbatches never raise the bubble's share of the step") {
    // On TPU v4 as it is (activations handed over at 45 GB/s per link), GPipe and circular.
    for (int per_stage : {4, 1}) {
        double previous = 1.0;
        for (int microbatches : {4, 8, 12, 16, 24, 32}) {
            const auto sim = pipelined(16, 4, microbatches, per_stage, "", "", "tpu-v4");
            const double share = sim.report.pipeline_bubble_s / sim.report.step_time_s;
            CAPTURE(per_stage);
            CAPTURE(microbatches);
            CHECK(share <= previous);
            CHECK(share > 0.0);
            previous = share;
        }
    }
}

namespace {

// Ops of a category on one stage's resources, by resource kind.
int count_ops(const run::Simulation& sim, parallel::OpCategory category, int stage) {
    int n = 0;
    for (const auto& op : sim.program.ops) {
        const auto& resource = sim.program.resources[static_cast<std::size_t>(op.resource)];
        if (op.category == category && resource.stage == stage) ++n;
    }
    return n;
}

}  // namespace

TEST_CASE("stage to stage: one collective-permute per microbatch and chunk boundary, each way") {
    // 8 layers in chunks of 2 on 2 stages: 2 repeats (circular), 4 chunks, 3 boundaries between
    // them. Forward: each microbatch's output of chunks 0, 1, 2 goes to the next stage, and the last
    // chunk's output of the last microbatch to the other stage's head; backward: the input gradient
    // of chunks 3, 2, 1 goes back, and stage 0's last input gradient to the other stage's embedding.
    const int microbatches = 4;
    const auto sim = pipelined(8, 2, microbatches, 2, "", "{data: 2, pipeline: 2}", "tpu-v4");
    const int boundaries = 3;
    int permutes = 0;
    for (int stage = 0; stage < 2; ++stage)
        permutes += count_ops(sim, parallel::OpCategory::collective_permute, stage);
    CHECK(permutes == 2 * (microbatches * boundaries + 1));
    // Every permute carries one microbatch's activations (or their gradient) on a chip: 2 sequences
    // split over data 2, 2048 x 2048 in bf16.
    for (const auto& op : sim.program.ops)
        if (op.category == parallel::OpCategory::collective_permute)
            CHECK(op.collective_bytes == doctest::Approx(1.0 * 2048 * 2048 * 2));
}

TEST_CASE("FSDP inside a stage: gathered per microbatch, per repeat, or once") {
    // 8 layers on 2 stages in chunks of 2 (2 repeats), FSDP 2 within each stage: a stage owns 4 layer
    // groups. Per microbatch each is gathered for the forward and the backward of every microbatch;
    // per repeat once for each pass; once, once for the step.
    const int microbatches = 4, groups = 4, passes = 2;
    const std::string mesh = "{pipeline: 2, fsdp: 2}";
    auto layer_gathers = [&](const std::string& extra) {
        const auto sim = pipelined(8, 2, microbatches, 2, extra, mesh, "tpu-v4");
        int n = 0;
        for (const auto& op : sim.program.ops) {
            const auto& resource = sim.program.resources[static_cast<std::size_t>(op.resource)];
            if (op.category == parallel::OpCategory::all_gather && resource.stage == 1 && op.layer >= 0) ++n;
        }
        return n;
    };
    CHECK(layer_gathers("") == groups * passes * microbatches);
    CHECK(layer_gathers(", pipeline_fsdp_ag_per_repeat: true") == groups * passes);
    CHECK(layer_gathers(", pipeline_fsdp_ag_once: true") == groups);
}

TEST_CASE("pipeline stages across slices: the permutes run over DCN") {
    const auto sim = run::simulate(test::run_from_text(R"(
schema: podsim.run/v1
model: llama3-8b
topology: tpu-v4
slice: 2x2x1
slices: 2
mesh: {ici: {fsdp: 4}, dcn: {pipeline: 2}}
training: {global_batch: 16, seq_len: 1024, optimizer: adamw, remat: full, num_pipeline_microbatches: 4,
  num_layers_per_pipeline_stage: 16}
)"));
    CHECK(sim.report.pipeline_stages == 2);
    CHECK(sim.report.pipeline_schedule == "gpipe");
    int over_dcn = 0;
    for (const auto& op : sim.program.ops) {
        if (op.category != parallel::OpCategory::collective_permute) continue;
        CHECK(sim.program.comm_axes[static_cast<std::size_t>(op.comm_axis)].kind ==
              parallel::ResourceKind::dcn);
        ++over_dcn;
    }
    CHECK(over_dcn == 2 * (4 * 1 + 1));
}
