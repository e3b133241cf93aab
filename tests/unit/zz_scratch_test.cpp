#include <doctest/doctest.h>
#include <iostream>
#include "support.hpp"
#include "training_run/whole_run.hpp"
#include "training_run/whole_run_format.hpp"
using namespace podsim;
TEST_CASE("scratch") {
    auto spec = test::run_from_text(
        "schema: podsim.run/v1\nname: unit\nmodel: unit-text-standin\ntopology: tpu-v3\nslice: 1x1\n"
        "mesh: {data: 1}\ntraining: {global_batch: 8, seq_len: 128, optimizer: adamw, dtype: fp32, "
        "param_dtype: fp32}\n"
        "runtime: {framework: pytorch-xla}\n");
    training_run::RunPlan plan;
    plan.train_steps = 1500;
    plan.log_every = 100;
    plan.overlap = training_run::Overlap::none;
    plan.lengths.distribution = training_run::LengthDistribution::normal;
    plan.lengths.mean = 50;
    plan.lengths.stddev = 20;
    plan.lengths.min = 16;
    plan.lengths.max = 128;
    spec.calibration.trace_per_op_pytorch_xla = 0;
    auto a = training_run::simulate_whole_run(spec, plan).steady_train_step_s;
    spec.calibration.trace_per_op_pytorch_xla = 1e-4;
    auto b = training_run::simulate_whole_run(spec, plan).steady_train_step_s;
    double t = 1e-4 + (1.0 / 7.69 - b) / 461.0;
    spec.calibration.trace_per_op_pytorch_xla = t;
    double c = training_run::simulate_whole_run(spec, plan).steady_train_step_s;
    t += (1.0 / 7.69 - c) / 461.0;
    std::cout << "a " << a << " b " << b << " trace fit " << t << "\n";
    spec.calibration.trace_per_op_pytorch_xla = t;
    auto w = training_run::simulate_whole_run(spec, plan);
    std::cout << training_run::format_whole_run(w);
    std::cout << "train ops " << w.programs[0].ops << " tensors " << w.programs[0].tensors << "\n";
    for (int batch : {32, 64}) {
        auto bert = test::run_from_text(
            "schema: podsim.run/v1\nname: bert\nmodel: bert-large\ntopology: tpu-v4\nslice: 1x1x1\n"
            "mesh: {data: 1}\ntraining: {global_batch: " +
            std::to_string(batch) +
            ", seq_len: 128, optimizer: adamw}\n"
            "runtime: {framework: pytorch-xla}\n");
        bert.calibration.trace_per_op_pytorch_xla = t;
        training_run::RunPlan p2;
        p2.train_steps = 200;
        for (auto ov : {training_run::Overlap::none, training_run::Overlap::run_post_order,
                        training_run::Overlap::run_post_order_and_fetch}) {
            p2.overlap = ov;
            auto r = training_run::simulate_whole_run(bert, p2);
            std::cout << batch << " " << training_run::overlap_name(ov) << " steady " << r.steady_train_step_s
                      << " gap " << r.steady_gap_s << " dev " << r.programs[0].device_s << " ops "
                      << r.programs[0].ops << " tensors " << r.programs[0].tensors << "\n";
        }
    }
}
