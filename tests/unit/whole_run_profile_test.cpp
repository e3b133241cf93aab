#include <doctest/doctest.h>

#include "core/diagnostics.hpp"
#include "profile/compare.hpp"
#include "profile/pt_xla_debug.hpp"
#include "profile/whole_run_compare.hpp"
#include "support.hpp"
#include "training_run/whole_run.hpp"

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
    const double error = (c.predicted_step_s - c.measured_step_s) / c.measured_step_s;
    CHECK(error == doctest::Approx(-0.083).epsilon(0.05));  // not +279.8% with compile in the step
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
