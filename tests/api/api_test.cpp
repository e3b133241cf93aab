#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "podsim/podsim.hpp"

namespace {

std::string source_path(const std::string& relative) {
    return std::string(PODSIM_SOURCE_DIR) + "/" + relative;
}

// Every diagnostic of the ConfigError `f` throws, one per line.
template <typename F>
std::string errors_of(F&& f) {
    try {
        f();
    } catch (const podsim::ConfigError& e) {
        return e.diagnostics().to_string();
    }
    return "no error";
}

}  // namespace

TEST_CASE("overrides change the config before it is checked, as a sweep axis would") {
    const std::string config = source_path("configs/default.yaml");
    auto plain = podsim::load_run(config);
    CHECK(plain.training.global_batch == 128);  // configs/default.yaml
    auto spec = podsim::load_run(
        config, {podsim::parse_override("training.global_batch=256"), podsim::parse_override("slice=2x2x2"),
                 podsim::parse_override("mesh={fsdp: 8}")});
    CHECK(spec.training.global_batch == 256);
    CHECK(spec.slice.chips() == 8);
    CHECK(spec.mesh.to_string() == "ici{fsdp=8}");
    // Overriding the batch in the YAML or in the RunSpec is the same run.
    plain.training.global_batch = 256;
    auto with_override = podsim::load_run(config, {podsim::parse_override("training.global_batch=256")});
    CHECK(podsim::simulate(with_override).report.step_time_s == podsim::simulate(plain).report.step_time_s);
    // per_chip_batch replaces global_batch instead of conflicting with it.
    auto per_chip = podsim::load_run(config, {podsim::parse_override("training.per_chip_batch=16")});
    CHECK(per_chip.training.global_batch == 16 * 4);
}

TEST_CASE("override mistakes are reported at the override, all at once with the file's") {
    const std::string config = source_path("configs/default.yaml");
    // The remat policies are listed in full between "one of" and "(did you mean"; only the ends matter here.
    const std::string both = errors_of([&] {
        podsim::load_run(config, {podsim::parse_override("training.global_bach=256"),
                                  podsim::parse_override("training.remat=ful")});
    });
    CHECK(both.rfind(
              "--set training.global_bach=256: error: training.global_bach: 'training.global_bach' is not a "
              "key of a run config (did you mean 'training.global_batch'?)\n"
              "--set training.remat=ful: error: training.remat: 'ful' is not one of none, full, ",
              0) == 0);
    CHECK(both.ends_with(" (did you mean 'full'?)\n"));
    CHECK(errors_of([] { podsim::parse_override("training.global_batch"); }) ==
          "--set training.global_batch: error: expected key.path=value (e.g. training.global_batch=256)\n");
    // The file's own mistakes keep their FILE:LINE:COL beside the override's.
    const std::string yaml =
        "schema: podsim.run/v1\nmodel: gpt2-2b\ntopology: tpu-v4\nslice: 2x2x1\n"
        "mesh: {fsdp: 4}\ntraining: {global_batch: 128, seq_len: 1024, optimizer: adamm}\n";
    CHECK(errors_of([&] {
              podsim::load_run_text(yaml, {podsim::parse_override("training.microbatches=zero")},
                                    "inline.yaml");
          }) ==
          "--set training.microbatches=zero: error: training.microbatches: expected a whole number, found "
          "'zero'\n"
          "inline.yaml:6:57: error: training.optimizer: 'adamm' is not one of adam, adamw, adafactor, sgd "
          "(did you mean 'adam'?)\n");
}

TEST_CASE("a key inside a model set beside the model's name is set among the named model's keys") {
    const std::string config = source_path("configs/mixtral-8x7b-ep4-v6e-256.yaml");
    // Either order: the whole model is written first (models/llama3-8b.yaml: 32 layers, dense).
    for (const auto& overrides :
         {std::vector<podsim::Override>{podsim::parse_override("model=llama3-8b"),
                                        podsim::parse_override("model.num_experts=8")},
          std::vector<podsim::Override>{podsim::parse_override("model.num_experts=8"),
                                        podsim::parse_override("model=llama3-8b")}}) {
        auto spec = podsim::load_run(config, overrides);
        CHECK(spec.model.name == "llama3-8b");
        CHECK(spec.model.layers == 32);
        CHECK(spec.model.experts == 8);
    }
    // A mistake the override makes inside the named model's own keys is at that file's line.
    const std::string error =
        errors_of([&] { podsim::load_run(config, {podsim::parse_override("model.num_experts=1")}); });
    CHECK(error.rfind(source_path("models/mixtral-8x7b.yaml") + ":", 0) == 0);
    CHECK(error.find("model.num_experts_per_tok: num_experts_per_tok applies to mixture-of-experts models") !=
          std::string::npos);
}

TEST_CASE("a run config as JSON text simulates like the YAML file") {
    const std::string json = R"({"schema": "podsim.run/v1", "name": "gpt2-2b-fsdp-v4-8", "model": "gpt2-2b",
        "topology": "tpu-v4", "slice": "2x2x1", "mesh": {"fsdp": 4},
        "training": {"global_batch": 128, "seq_len": 1024, "dtype": "bf16", "param_dtype": "fp32",
                     "optimizer": "adafactor", "remat": "full"},
        "runtime": {"framework": "pytorch-xla", "async_collectives": false}})";
    auto from_json = podsim::simulate(podsim::load_run_text(json, {}, "<json>", source_path("configs")));
    auto from_file = podsim::simulate(podsim::load_run(source_path("configs/default.yaml")));
    CHECK(podsim::report_json(from_json.report) == podsim::report_json(from_file.report));
}

TEST_CASE("a broken invariant is an InternalError, not an abort") {
    auto spec = podsim::load_run(source_path("configs/default.yaml"));
    spec.topology.chip.peak_flops.clear();  // only reachable by building specs by hand
    spec.topology.chip.hbm_bandwidth = 0.0;
    CHECK_THROWS_AS(podsim::simulate(spec), podsim::InternalError);
    try {
        podsim::simulate(spec);
    } catch (const podsim::InternalError& e) {
        CHECK(std::string(e.what()).rfind("internal error (a bug, please report it): ", 0) == 0);
    }
}

TEST_CASE("collectives by query, with errors at the query's key") {
    podsim::CollectiveQuery q;
    q.slice = "4x4x4";
    q.mesh = "fsdp=16,tensor=4";
    q.axis = "fsdp";
    auto request = podsim::collective_request(q);
    CHECK(request.bytes == 64.0 * 1024 * 1024);
    auto result = podsim::run_collective(request);
    CHECK(result.group_size == 16);
    const std::string json = podsim::collective_json(request, result);
    CHECK(json.rfind(R"({"op":"all-gather","bytes":67108864.0,"group_size":16,"time_s":)", 0) == 0);
    q.slice = "4x4";
    q.op = "all-gahter";
    CHECK(errors_of([&] { podsim::collective_request(q); }) ==
          "podsim collective: error: op: 'all-gahter' is not one of all-gather, reduce-scatter, all-reduce, "
          "all-to-all, collective-permute\n");
    q.op = "all-gather";
    q.bytes = "-1 MiB";
    CHECK(errors_of([&] { podsim::collective_request(q); }) ==
          "podsim collective: error: bytes: must be positive\n");
    q.bytes = "64MiB";
    q.mesh = "fsdp=4,tensor=4,fsdp=1";  // a run config's mesh refuses it too
    CHECK(errors_of([&] { podsim::collective_request(q); }) ==
          "podsim collective: error: mesh: axis 'fsdp' given twice\n");
}

TEST_CASE("explain names what it can explain") {
    CHECK(podsim::explain("run").find("training.global_batch") != std::string::npos);
    // The report and the sweep rows, from the report registry.
    CHECK(podsim::explain("report").find("memory.peak_bytes") != std::string::npos);
    CHECK(podsim::explain("sweep").find("exposed_communication_s") != std::string::npos);
    CHECK(errors_of([] { podsim::explain("sweeep"); }).find("(did you mean 'sweep'?)") != std::string::npos);
    CHECK(errors_of([] { podsim::explain("rnu"); }).find("cannot explain 'rnu': one of run, model") !=
          std::string::npos);
}
