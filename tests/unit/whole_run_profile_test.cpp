#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "core/diagnostics.hpp"
#include "profile/calibrate.hpp"
#include "profile/compare.hpp"
#include "profile/pt_xla_debug.hpp"
#include "profile/whole_run_compare.hpp"
#include "profile/whole_run_suite.hpp"
#include "report/format.hpp"
#include "support.hpp"
#include "training_run/whole_run.hpp"
#include "training_run/whole_run_format.hpp"

using namespace podsim;

namespace {
std::string data(const std::string& name) {
    return test::source_path("tests/data/" + name);
}
}  // namespace

TEST_CASE("a PT_XLA_DEBUG log gives each metric's latest process-wide count and its step") {
    auto text = profile::read_file_bytes(data("seed001_pt_xla_debug_eval_device_accumulation.txt"));
    REQUIRE(profile::is_pt_xla_debug_log(text));
    auto p = profile::read_pt_xla_debug_log("seed001", text);
    CHECK(p.format == "pt-xla-debug");
    CHECK(p.steps == 17);
    CHECK(p.metric_counts.at("CompileTime") == 16);  // the seed's last line: 16 counts during 17 steps
    CHECK(p.metric_steps.at("CompileTime") == 17);
    CHECK(p.step_time_s == 0.0);  // a log has no times: no step comparison
    auto host = profile::read_pt_xla_debug_log(
        "seed001", profile::read_file_bytes(data("seed001_pt_xla_debug_eval_host_accumulation.txt")));
    CHECK(host.metric_counts.at("TransferFromServerTime") == 4097);
    CHECK(host.metric_steps.at("TransferFromServerTime") == 694);
    CHECK_THROWS_AS(profile::read_pt_xla_debug_log("x", "pt-xla-profiler: nothing here\n"), core::UserError);
}

TEST_CASE("a metrics report is compared execution against execution, compilation apart") {
    // The recompiling report: ExecuteTime 82.4 s over 20 samples = 4.120 s per execution,
    // CompileTime 252.3 s over 20 = 12.615 s per step.
    auto spec = test::load_config("configs/default.yaml");
    spec.runtime.recompile_every_step = true;
    auto sim = run::simulate(spec);
    auto measured = profile::read_profile(data("pytorch_xla_metrics_recompiling.txt"));
    auto c = profile::compare(sim.report, measured, 128);
    CHECK(c.step_label == "execution");
    // The execution excludes host and compile: the step without its host time.
    CHECK(c.predicted_step_s == doctest::Approx(sim.report.step_time_s - sim.report.host_s));
    CHECK(c.measured_step_s == doctest::Approx(4.120).epsilon(0.001));
    // The default config's execution is within 10% of the report's; with the 12.6 s compile counted
    // in the step it would be off by about +280%.
    const double error = (c.predicted_step_s - c.measured_step_s) / c.measured_step_s;
    CHECK(std::abs(error) < 0.10);
    bool compile_row = false;
    for (const auto& r : c.categories) {
        if (r.category == "compile") {
            compile_row = true;
            CHECK(r.predicted_s == doctest::Approx(sim.report.compile_time_s));
            CHECK(r.measured_s == doctest::Approx(12.615));
        }
        if (r.category == "host")
            CHECK(r.predicted_s == doctest::Approx(sim.report.host_s - sim.report.compile_time_s));
    }
    CHECK(compile_row);
}

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
    const std::string path =
        (std::filesystem::temp_directory_path() / (name + "-" + std::to_string(::getpid()) + ".json"))
            .string();
    std::ofstream(path) << text;
    return path;
}

}  // namespace

TEST_CASE("a podsim trace with a 9 ms host gap reads back as 9 ms of host, and calibrate fits it") {
    auto spec = test::load_config("configs/default.yaml");
    auto truth = spec;
    truth.calibration.host_overhead_pytorch_xla = 9e-3;
    auto sim = run::simulate(truth);
    const std::string path =
        write_temp("podsim-gap", report::chrome_trace("gap", sim.program, sim.timeline, sim.memory));
    auto measured = profile::read_profile(path);
    // The host span precedes the device work: it is inside the step, and nothing runs on the device.
    CHECK(measured.category_s.at("host") == doctest::Approx(9e-3).epsilon(0.10));
    CHECK(measured.step_time_s == doctest::Approx(sim.report.step_time_s).epsilon(1e-6));
    auto c = profile::case_from_profile("gap", spec, path);
    auto result = profile::calibrate({c}, {"host_overhead_pytorch_xla"}, spec.calibration);
    CHECK(result.fitted.host_overhead_pytorch_xla == doctest::Approx(9e-3).epsilon(0.10));
    std::filesystem::remove(path);
}

TEST_CASE("a whole-run trace reads back with its steps and the time between executions") {
    auto spec = test::load_config("configs/default.yaml");
    training_run::RunPlan plan;
    plan.train_steps = 20;
    spec.calibration.launch_per_execution_pytorch_xla = 9e-3;  // a 9 ms gap between executions
    auto w = training_run::simulate_whole_run(spec, plan);
    CHECK(w.steady_gap_s == doctest::Approx(9e-3).epsilon(0.01));
    const std::string path = write_temp("podsim-whole-run", training_run::whole_run_trace(w));
    auto measured = profile::read_profile(path);
    CHECK(measured.steps == 20);
    CHECK(measured.step_time_s == doctest::Approx(w.run_time_s / 20).epsilon(1e-6));
    auto c = profile::compare_whole_run(w, measured);
    bool gap_row = false;
    for (const auto& r : c.rows) {
        if (r.quantity == "time without device work") {
            gap_row = true;
            CHECK(r.measured == doctest::Approx(r.predicted).epsilon(1e-6));
        }
    }
    CHECK(gap_row);
    // The steady gap alone: the last steps of the trace, compile of the first step excluded.
    double busy = 0.0, window = 0.0;
    for (const auto& a : w.activities) {
        if (a.step < 10) continue;
        if (a.track == training_run::Track::device) busy += core::to_seconds(a.end - a.start);
    }
    window = core::to_seconds(w.steps.back().end - w.steps[9].end);
    CHECK((window - busy) / 10 == doctest::Approx(9e-3).epsilon(0.10));
    std::filesystem::remove(path);
}

TEST_CASE("validate reads the seed's PT_XLA_DEBUG lines against a whole-run prediction") {
    auto spec = test::load_config("configs/default.yaml");
    training_run::RunPlan plan;
    plan.eval.steps = 20;
    plan.eval.batch = 8;
    plan.eval.accumulate = training_run::Accumulate::device;
    auto w = training_run::simulate_whole_run(spec, plan);
    auto measured = profile::read_profile(data("seed001_pt_xla_debug_eval_device_accumulation.txt"));
    auto c = profile::compare_whole_run(w, measured);
    REQUIRE(c.rows.size() == 1);
    CHECK(c.rows[0].quantity == "CompileTime count");
    CHECK(c.rows[0].predicted == doctest::Approx(1.0));         // 17 compilations in 17 steps
    CHECK(c.rows[0].measured == doctest::Approx(16.0 / 17.0));  // the seed: 16 in 17
    REQUIRE(c.predicted_debug.size() == 1);
    CHECK(c.predicted_debug[0] == "pt-xla-profiler: CompileTime too frequent: 17 counts during 17 steps");
}

TEST_CASE("calibrate fits host costs of whole runs: the 002 gaps, and tracing from a whole-run trace") {
    // The two gap cases of the suite, fitted from a wrong start: FetchTensorData 4.185 us per tensor
    // (6.5 ms over BERT-Large's 1,553 synced tensors) and a 2.5 ms launch.
    std::vector<profile::CalibrationCase> cases;
    for (const auto& v : config::load_validation_suite(test::source_path("tests/validation"))) {
        if (v.id == "002-bert-large-gap-before" || v.id == "002-bert-large-gap-after")
            cases.push_back({v.id, v.run, profile::whole_run_targets(v)});
    }
    REQUIRE(cases.size() == 2);
    auto start = cost::Calibration::defaults();
    start.fetch_per_tensor_pytorch_xla = 1e-6;
    start.launch_per_execution_pytorch_xla = 1e-3;
    auto fit = profile::calibrate(cases, {"fetch_per_tensor_pytorch_xla", "launch_per_execution_pytorch_xla"},
                                  start);
    CHECK(fit.fitted.fetch_per_tensor_pytorch_xla == doctest::Approx(4.185e-6).epsilon(0.02));
    CHECK(fit.fitted.launch_per_execution_pytorch_xla == doctest::Approx(2.5e-3).epsilon(0.02));

    // A host-bound whole run traced with tracing at 200 us per op; fitted from the default.
    auto spec = test::load_config("configs/unit-qnli-train.yaml");
    spec.whole_run->train_steps = 60;
    spec.whole_run->lengths = {};
    auto truth = spec;
    truth.calibration.trace_per_op_pytorch_xla = 200e-6;
    auto w = training_run::simulate_whole_run(truth, *truth.whole_run);
    const std::string path = write_temp("podsim-whole-run-cal", training_run::whole_run_trace(w));
    auto c = profile::case_from_profile("trace", spec, path);
    CHECK(c.targets.size() == 2);
    auto traced = profile::calibrate({c}, {"trace_per_op_pytorch_xla"}, spec.calibration);
    CHECK(traced.fitted.trace_per_op_pytorch_xla == doctest::Approx(200e-6).epsilon(0.02));
    std::filesystem::remove(path);
}
