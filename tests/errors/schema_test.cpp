#include <doctest/doctest.h>

#include "config/schema.hpp"
#include "support.hpp"

// The schema tables drive both `podsim explain` and the loader's unknown-key check: a config that
// uses every documented key must load, and explain must list every key.

using namespace podsim;

TEST_CASE("a run config using every documented key loads") {
    auto spec = test::run_from_text(R"(
schema: podsim.run/v1
name: every-key
description: all keys at once
notes: none
model: gpt2-small
topology: tpu-v4
slice: 4x4x8
slices: 2
twisted_torus: true
mesh:
  ici: {fsdp: 32, tensor: 4}
  dcn: {data: 2}
  mapping: {tensor: [x]}
training:
  global_batch: 256
  seq_len: 1024
  microbatches: 2
  dtype: bf16
  param_dtype: bf16
  master_dtype: fp32
  optimizer: adamw
  remat: save_dots
  tensor_sequence: true
runtime:
  framework: jax
  async_collectives: true
  host_overhead: 1 ms
  prefetch_depth: 2
  compile_time: 30 s
  recompile_every_step: false
  host_init: sharded
report:
  mfu_attention: true
calibration: {hbm_efficiency: 0.8, op_overhead: 1 us}
)");
    CHECK(spec.twisted_torus);
    CHECK(spec.training.tensor_sequence);
    CHECK(spec.runtime.prefetch_depth == 2);
    auto report = run::simulate(spec).report;
    CHECK(report.chips == 256);
    // per_chip_batch is the alternative to global_batch, so it is exercised on its own.
    for (const auto& key : config::run_schema()) {
        CAPTURE(key.path);
        CHECK(config::explain("run").find(std::string(key.path)) != std::string::npos);
    }
}

TEST_CASE("explain lists every model and topology key and every calibration parameter") {
    for (const auto& key : config::model_schema())
        CHECK(config::explain("model").find(std::string(key.path)) != std::string::npos);
    for (const auto& key : config::topology_schema()) {
        CHECK(config::explain("topology").find(std::string(key.path)) != std::string::npos);
    }
    for (const auto& name : cost::calibration_parameter_names()) {
        CHECK(config::explain("calibration").find(name) != std::string::npos);
    }
}

TEST_CASE("a published case file runs as its run block") {
    auto spec = config::load_run_file(test::source_path("tests/validation/gpt2-20b-fsdp-v4-128.yaml"));
    CHECK(spec.name == "gpt2-20b-fsdp-v4-128");
    CHECK(spec.model.layers == 43);
    CHECK(spec.slice.chips() == 64);
}

TEST_CASE("the run schema's keys per mapping, worked out once, are keys_under's") {
    for (const char* prefix : {"", "training", "runtime", "mesh", "report", "calibration"})
        CHECK(config::run_keys_under(prefix) == config::keys_under(config::run_schema(), prefix));
    CHECK(!config::run_keys_under("training").empty());
    CHECK(config::run_keys_under("no.such.mapping").empty());
}
