#include <doctest/doctest.h>

#include <algorithm>
#include <functional>
#include <limits>

#include "core/diagnostics.hpp"
#include "parallel/sharding_errors.hpp"
#include "support.hpp"
#include "training_run/programs.hpp"
#include "training_run/whole_run.hpp"
#include "training_run/whole_run_format.hpp"

using namespace podsim;
using training_run::Accumulate;
using training_run::Overlap;
using training_run::RunPlan;

namespace {

// BERT-Large on one v4 chip, data parallel over nothing: no ICI, so every time is exact integer
// arithmetic on the simulated step.
run::RunSpec bert_one_chip(const std::string& framework) {
    return test::run_from_text(
        "schema: podsim.run/v1\nname: bert-1chip\nmodel: bert-large\ntopology: tpu-v4\nslice: 1x1x1\n"
        "mesh: {data: 1}\ntraining: {global_batch: 32, seq_len: 128, optimizer: adamw}\n"
        "runtime: {framework: " +
        framework + "}\n");
}

// Every host cost of the graph-size model at zero.
void zero_host_costs(run::RunSpec& spec) {
    auto& c = spec.calibration;
    c.trace_per_op_pytorch_xla = c.hash_per_op_pytorch_xla = c.post_order_per_op_pytorch_xla = 0.0;
    c.fetch_per_tensor_pytorch_xla = c.launch_per_execution_pytorch_xla = 0.0;
    c.trace_per_op_jax = c.dispatch_per_executable_jax = c.dispatch_per_argument_jax = 0.0;
}

RunPlan train_only(int steps) {
    RunPlan plan;
    plan.train_steps = steps;
    plan.steady_window = 10;
    return plan;
}

}  // namespace

TEST_CASE("with the host as today's constant, the steady-state step is today's step exactly") {
    for (const char* framework : {"pytorch-xla", "jax"}) {
        CAPTURE(framework);
        auto spec = bert_one_chip(framework);
        spec.runtime.host_overhead = 30e-3;
        const double today = run::simulate(spec).report.step_time_s;
        auto w = training_run::simulate_whole_run(spec, train_only(20));
        CHECK(w.single_step_s == today);
        // Every steady step: the step of `podsim run` (PyTorch/XLA: host then device; JAX: the larger).
        CHECK(w.steady_train_step_s == doctest::Approx(today).epsilon(1e-12));
        for (std::size_t i = 10; i < w.steps.size(); ++i)
            CHECK(w.steps[i].duration_s == doctest::Approx(today).epsilon(1e-12));
    }
    // The PyTorch/XLA FSDP default config (4 chips, ICI collectives) as well.
    auto spec = test::load_config("configs/default.yaml");
    spec.runtime.host_overhead = spec.calibration.host_overhead_pytorch_xla;
    const double today = run::simulate(spec).report.step_time_s;
    RunPlan plan = train_only(3);
    plan.steady_window = 1;
    auto w = training_run::simulate_whole_run(spec, plan);
    CHECK(w.steady_train_step_s == doctest::Approx(today).epsilon(1e-12));
}

TEST_CASE("with no host costs, the steady-state step is the device step") {
    auto spec = bert_one_chip("pytorch-xla");
    zero_host_costs(spec);
    auto device_only = spec;
    device_only.runtime.host_overhead = 0.0;
    const double device_s = run::simulate(device_only).report.step_time_s;
    auto w = training_run::simulate_whole_run(spec, train_only(20));
    CHECK(w.steady_train_step_s == doctest::Approx(device_s).epsilon(1e-12));
    CHECK(w.steady_gap_s == doctest::Approx(0.0));
    REQUIRE(w.programs.size() == 1);
    CHECK(w.programs[0].device_s == doctest::Approx(device_s).epsilon(1e-12));
}

TEST_CASE("the gap between executions follows the PyTorch/XLA overlap setting") {
    auto spec = bert_one_chip("pytorch-xla");
    zero_host_costs(spec);
    auto& c = spec.calibration;
    c.post_order_per_op_pytorch_xla = 2e-6;
    c.fetch_per_tensor_pytorch_xla = 4e-6;
    c.launch_per_execution_pytorch_xla = 1e-3;
    c.trace_per_op_pytorch_xla = 5e-6;  // traced while the previous step runs: hidden
    for (Overlap overlap : {Overlap::none, Overlap::run_post_order, Overlap::run_post_order_and_fetch}) {
        CAPTURE(training_run::overlap_name(overlap));
        RunPlan plan = train_only(20);
        plan.overlap = overlap;
        auto w = training_run::simulate_whole_run(spec, plan);
        const auto& p = w.programs.at(0);
        const double post_order = 2e-6 * p.ops, fetch = 4e-6 * p.tensors;
        // What waits for the previous execution is exposed; the launch always is.
        double expected = 1e-3;
        if (overlap == Overlap::none) expected += post_order + fetch;
        if (overlap == Overlap::run_post_order) expected += fetch;
        CHECK(w.steady_gap_s == doctest::Approx(expected).epsilon(1e-6));
        CHECK(w.steady_train_step_s == doctest::Approx(p.device_s + expected).epsilon(1e-6));
    }
}

TEST_CASE("a host-bound PyTorch/XLA step: the period is the host's chain, the device waits") {
    auto spec = bert_one_chip("pytorch-xla");
    zero_host_costs(spec);
    spec.calibration.trace_per_op_pytorch_xla = 1e-3;  // far longer than the device step
    auto w = training_run::simulate_whole_run(spec, train_only(20));
    const auto& p = w.programs.at(0);
    CHECK(w.steady_train_step_s == doctest::Approx(1e-3 * p.ops).epsilon(1e-9));
    CHECK(w.steady_gap_s == doctest::Approx(1e-3 * p.ops - p.device_s).epsilon(1e-9));
}

TEST_CASE("compile cache: one compilation per distinct program, kept apart from execution") {
    auto spec = bert_one_chip("pytorch-xla");
    RunPlan plan = train_only(50);
    plan.lengths.distribution = training_run::LengthDistribution::uniform;
    plan.lengths.min = 16;
    plan.lengths.max = 128;
    plan.lengths.padding = training_run::Padding::none;
    auto w = training_run::simulate_whole_run(spec, plan);
    long distinct = static_cast<long>(w.programs.size());
    CHECK(distinct > 1);
    CHECK(w.metrics["CompileTime"].count == distinct);
    CHECK(w.metrics["ExecuteTime"].count == 50);
    CHECK(w.counters["CachedCompile"] == 50 - distinct);
    double compile_s = 0.0;
    for (const auto& p : w.programs) compile_s += p.compile_s;
    CHECK(w.metrics["CompileTime"].total_s == doctest::Approx(compile_s));
    // Execution time never includes compilation.
    double execute_s = 0.0;
    for (const auto& s : w.activities) {
        if (s.track == training_run::Track::device) execute_s += core::to_seconds(s.end - s.start);
    }
    CHECK(w.metrics["ExecuteTime"].total_s == doctest::Approx(execute_s));
    // Padding to the maximum: one program, one compilation.
    plan.lengths.padding = training_run::Padding::max;
    auto padded = training_run::simulate_whole_run(spec, plan);
    CHECK(padded.programs.size() == 1);
    CHECK(padded.metrics["CompileTime"].count == 1);
    // A persistent cache: loads, no compilation.
    plan.cache = training_run::CompileCache::persistent;
    auto cached = training_run::simulate_whole_run(spec, plan);
    CHECK(cached.metrics.count("CompileTime") == 0);
    CHECK(cached.run_time_s < padded.run_time_s);
    // Same inputs, same run.
    plan.cache = training_run::CompileCache::process;
    plan.lengths.padding = training_run::Padding::none;
    auto again = training_run::simulate_whole_run(spec, plan);
    CHECK(again.run_time_s == w.run_time_s);
    CHECK(again.programs.size() == w.programs.size());
}

TEST_CASE("evaluation accumulating on the device recompiles every step; on the host it transfers") {
    auto spec = bert_one_chip("pytorch-xla");
    RunPlan plan;
    plan.eval.steps = 17;
    plan.eval.batch = 8;
    plan.eval.accumulated_tensors = 6;
    plan.eval.accumulate = Accumulate::device;
    auto device = training_run::simulate_whole_run(spec, plan);
    CHECK(device.metrics["CompileTime"].count == 17);
    // PT_XLA_DEBUG's rule (torch_xla metrics_analysis.cpp): after 10 warm-up steps, more than 0.5
    // compilations per step; counts are the process's so far.
    REQUIRE(device.debug_lines.size() == 7);
    CHECK(device.debug_lines.front() ==
          "pt-xla-profiler: CompileTime too frequent: 11 counts during 11 steps");
    CHECK(device.debug_lines.back() ==
          "pt-xla-profiler: CompileTime too frequent: 17 counts during 17 steps");
    // Steady eval step: about one compilation of the eval program.
    CHECK(device.steady_eval_step_s > device.programs.back().compile_s);

    plan.eval.accumulate = Accumulate::host;
    auto host = training_run::simulate_whole_run(spec, plan);
    CHECK(host.metrics["CompileTime"].count == 1);
    CHECK(host.metrics["TransferFromServerTime"].count == 17 * 6);
    CHECK(host.debug_lines.front() ==
          "pt-xla-profiler: TransferFromServerTime too frequent: 6 counts during 1 steps");
    CHECK(host.steady_eval_step_s < device.steady_eval_step_s / 10);
}

TEST_CASE("ops without a lowering split the graph: a program per part, transfers both ways") {
    auto spec = bert_one_chip("pytorch-xla");
    RunPlan plan = train_only(10);
    plan.unlowered_ops = 2;
    auto w = training_run::simulate_whole_run(spec, plan);
    CHECK(w.programs.size() == 3);
    CHECK(w.metrics["ExecuteTime"].count == 30);
    CHECK(w.metrics["TransferFromServerTime"].count == 20);
    CHECK(w.metrics["TransferToServerTime"].count == 10 + 20);  // inputs, and the ops' outputs
}

TEST_CASE("JAX dispatches ahead and blocks only at syncs") {
    auto spec = bert_one_chip("jax");
    RunPlan plan = train_only(40);
    auto free_running = training_run::simulate_whole_run(spec, plan);
    // Dispatch is far shorter than the device step: the device never waits after the first step.
    CHECK(free_running.steady_gap_s == doctest::Approx(0.0));
    plan.log_every = 10;
    auto logged = training_run::simulate_whole_run(spec, plan);
    CHECK(logged.metrics["TransferFromServerTime"].count == 4);
    CHECK(logged.run_time_s > free_running.run_time_s);
}

TEST_CASE("whole-run outputs: metrics report layout, JSON and trace") {
    auto spec = bert_one_chip("pytorch-xla");
    RunPlan plan = train_only(12);
    plan.log_every = 4;
    auto w = training_run::simulate_whole_run(spec, plan);
    const std::string report = training_run::metrics_report(w);
    CHECK(report.find("Metric: CompileTime\n  TotalSamples: 1\n  Accumulator: ") != std::string::npos);
    CHECK(report.find("Metric: TransferFromServerTime\n  TotalSamples: 3\n") != std::string::npos);
    CHECK(report.find("Counter: MarkStep\n  Value: 12\n") != std::string::npos);
    CHECK(training_run::whole_run_json(w).find("\"schema\": \"podsim.whole-run/v1\"") != std::string::npos);
    const std::string trace = training_run::whole_run_trace(w);
    CHECK(trace.find("ProfilerStep#11") != std::string::npos);
    CHECK(trace.find("FetchTensorData") != std::string::npos);
    CHECK(training_run::format_whole_run(w).find("gap between executions") != std::string::npos);
}

TEST_CASE("parameter tensors: BERT-Large counts q, k, v, output, two MLP matrices and two norms per layer") {
    auto spec = bert_one_chip("pytorch-xla");
    // 24 layers x 8 matrices-or-norms x 2 (weight and bias) + token and position embeddings, the
    // final norm's two, and the untied or not head: bert-large ties its embeddings.
    CHECK(training_run::parameter_tensors(spec) == 24 * 16 + 2 + 2);
    CHECK(training_run::optimizer_state_per_parameter(spec) == 2);
}

namespace {

// Every figure of two whole runs, exactly: the closed form of repeated periods must give what
// running each step gives, to the picosecond.
void check_same_run(const training_run::WholeRun& a, const training_run::WholeRun& b) {
    CHECK(a.run_time_s == b.run_time_s);
    CHECK(a.train_steps == b.train_steps);
    CHECK(a.eval_steps == b.eval_steps);
    CHECK(a.train_time_s == b.train_time_s);
    CHECK(a.eval_time_s == b.eval_time_s);
    CHECK(a.steady_window == b.steady_window);
    CHECK(a.steady_train_step_s == b.steady_train_step_s);
    CHECK(a.steady_eval_step_s == b.steady_eval_step_s);
    CHECK(a.warmup_loss_s == b.warmup_loss_s);
    CHECK(a.steady_gap_s == b.steady_gap_s);
    CHECK(a.mean_gap_s == b.mean_gap_s);
    CHECK(a.counters == b.counters);
    REQUIRE(a.metrics.size() == b.metrics.size());
    for (const auto& entry : a.metrics) {
        const auto& name = entry.first;  // a plain reference: CAPTURE cannot take a binding
        const auto& m = entry.second;
        CAPTURE(name);
        CHECK(m.count == b.metrics.at(name).count);
        CHECK(m.total_s == b.metrics.at(name).total_s);
    }
    CHECK(a.programs.size() == b.programs.size());
    CHECK(a.debug_line_count == b.debug_line_count);
    CHECK(a.debug_lines == b.debug_lines);
    CHECK(a.last_debug_lines == b.last_debug_lines);
    CHECK(a.compile_steps == b.compile_steps);
    CHECK(a.steps.size() == b.steps.size());
    CHECK(a.activities.size() == b.activities.size());
}

// A small model on one v4 chip: steps of tens of microseconds, so that long runs stay cheap.
run::RunSpec small_one_chip(const std::string& framework) {
    return test::run_from_text(
        "schema: podsim.run/v1\nname: small-1chip\nmodel: unit-text-standin\ntopology: tpu-v4\nslice: 1x1x1\n"
        "mesh: {data: 1}\ntraining: {global_batch: 8, seq_len: 128, optimizer: adamw}\n"
        "runtime: {framework: " +
        framework + "}\n");
}

}  // namespace

TEST_CASE("repeated periods added in closed form give exactly what running every step gives") {
    struct Case {
        const char* what;
        const char* framework;
        std::function<void(RunPlan&, run::RunSpec&)> set;
        bool jumps;  // whether the run has stretches to add up
    };
    const std::vector<Case> cases = {
        {"PyTorch/XLA, log every 7, evaluation on the host every 1000, an op without a lowering, last batch",
         "pytorch-xla",
         [](RunPlan& p, run::RunSpec&) {
             p.log_every = 7;
             p.eval.every = 1000;
             p.eval.steps = 3;
             p.eval.accumulate = Accumulate::host;
             p.eval.accumulated_tensors = 2;
             p.unlowered_ops = 1;
             p.last_batch = 3;
         },
         true},
        {"JAX dispatching ahead of the device, input loaded ahead", "jax",
         [](RunPlan& p, run::RunSpec&) { p.input_host_time = 1e-6; }, true},
        {"an input loader slower than the step", "pytorch-xla",
         [](RunPlan& p, run::RunSpec&) { p.input_host_time = 0.5; }, true},
        {"evaluation accumulated on the device every 2000 steps", "pytorch-xla",
         [](RunPlan& p, run::RunSpec&) {
             p.eval.every = 2000;
             p.eval.steps = 4;
             p.eval.accumulate = Accumulate::device;
             p.overlap = Overlap::none;
         },
         true},
        {"the host as a constant, a long steady window", "pytorch-xla",
         [](RunPlan& p, run::RunSpec& s) {
             s.runtime.host_overhead = 2e-3;
             p.steady_window = 5000;
         },
         true},
        {"evaluation only", "jax",
         [](RunPlan& p, run::RunSpec&) {
             p.train_steps = 0;
             p.eval.steps = 100'000;
             p.eval.last_batch = 5;
         },
         true},
        {"lengths drawn per batch: no stretch repeats", "pytorch-xla",
         [](RunPlan& p, run::RunSpec&) {
             p.lengths.distribution = training_run::LengthDistribution::uniform;
             p.lengths.min = 120;
             p.lengths.max = 128;
         },
         false},
    };
    for (const auto& c : cases) {
        CAPTURE(c.what);
        auto spec = small_one_chip(c.framework);
        RunPlan plan;
        plan.train_steps = 100'000;
        plan.steady_window = 100;
        c.set(plan, spec);
        const auto stepped = training_run::simulate_whole_run(spec, plan, {.jump_periods = false});
        const auto jumped = training_run::simulate_whole_run(spec, plan);
        CHECK(stepped.simulated_steps == stepped.total_steps());
        if (c.jumps) {
            CHECK(jumped.simulated_steps < stepped.total_steps() / 2);
        } else {
            CHECK(jumped.simulated_steps == stepped.total_steps());
        }
        check_same_run(jumped, stepped);
    }
}

TEST_CASE("counts at any step come from the plan: the same as the steps recorded one by one") {
    auto spec = small_one_chip("pytorch-xla");
    for (int variant = 0; variant < 4; ++variant) {
        CAPTURE(variant);
        RunPlan plan;
        plan.train_steps = 300 + variant;
        plan.log_every = variant + 2;
        plan.unlowered_ops = variant % 2;
        plan.eval.every = variant == 3 ? 0 : 40 + variant;
        plan.eval.steps = 5;
        plan.eval.accumulate = variant % 2 ? Accumulate::host : Accumulate::device;
        plan.eval.accumulated_tensors = 3;
        auto w = training_run::simulate_whole_run(spec, plan);
        REQUIRE(static_cast<long>(w.steps.size()) == w.total_steps());
        std::vector<std::string> lines;
        for (const auto& s : w.steps) {
            CAPTURE(s.index);
            const auto c = w.counts_at(s.index);
            CHECK(c.index == s.index);
            CHECK(c.compiles == s.compiles_so_far);
            CHECK(c.from_device == s.from_device_so_far);
            for (auto& l : w.debug_lines_at(s.index)) lines.push_back(std::move(l));
        }
        CHECK(lines == w.debug_lines);
        CHECK(w.debug_line_count == static_cast<long>(w.debug_lines.size()));
    }
}

TEST_CASE(
    "a run of 500 million steps costs no more memory nor time than its periods; one too long is an error") {
    auto spec = small_one_chip("jax");  // 11 ms per step: 500 million of them in 64 days
    RunPlan plan;
    plan.train_steps = 500'000'000;
    plan.log_every = 1000;
    const auto w = training_run::simulate_whole_run(spec, plan);
    CHECK(w.train_steps == 500'000'000);
    CHECK(w.counters.at("MarkStep") == 500'000'000);
    CHECK(static_cast<long>(w.steps.size()) == training_run::kRecordedSteps);  // only the first are kept
    CHECK(w.simulated_steps < 100'000);
    CHECK(w.metrics.at("TransferFromServerTime").count == 500'000);
    CHECK(w.run_time_s > 0.0);
    CHECK(w.run_time_s < 106.0 * 86400.0);

    // BERT-Large's step is too long for 2^31 of them within 106 days of simulated time: refused at
    // once, whether the lengths repeat or not.
    auto bert = bert_one_chip("pytorch-xla");
    plan.train_steps = std::numeric_limits<int>::max();
    plan.lengths.distribution = training_run::LengthDistribution::normal;
    plan.lengths.mean = 100;
    plan.lengths.stddev = 10;
    plan.lengths.min = 64;
    plan.lengths.max = 128;
    plan.location.at = {"bert.yaml", 12, 3};
    try {
        (void)training_run::simulate_whole_run(bert, plan);
        FAIL("expected a UserError");
    } catch (const core::UserError& e) {
        const auto& item = e.diagnostics().items().at(0);
        CHECK(item.location.file == "bert.yaml");
        CHECK(item.location.line == 12);
        CHECK(item.key_path == "whole_run");
        CHECK(item.message.find("longer than podsim's simulated time reaches") != std::string::npos);
    }
}

TEST_CASE("a last partial batch with pipeline stages is padded into every pipeline microbatch") {
    // 4 stages x FSDP 2, 8 pipeline microbatches: a batch must split into 8 microbatches of a
    // multiple of 2 sequences, so a last batch of 7 runs as 16 (as 8 it would put half a sequence on
    // each FSDP shard, a config `podsim run` refuses).
    auto spec = test::run_from_text(
        "schema: podsim.run/v1\nmodel: {schema: podsim.model/v1, name: tiny, family: decoder, layers: 8, "
        "d_model: 512, heads: 8, d_ff: 1024, activation: swiglu, vocab: 32000}\ntopology: tpu-v4\n"
        "slice: 2x2x2\nmesh: {pipeline: 4, fsdp: 2}\n"
        "training: {global_batch: 32, seq_len: 1024, num_pipeline_microbatches: 8}\n");
    training_run::ProgramLibrary programs(spec, train_only(4));
    auto padded = spec;
    padded.training.global_batch = 16;
    CHECK(parallel::sharding_errors(padded.model, padded.training, padded.topology, padded.slice,
                                    padded.slices, padded.mesh)
              .empty());
    padded.runtime.host_overhead = 0.0;
    CHECK(programs.step(1024, 7).step_time == run::simulate(padded).timeline.step_time);
}
