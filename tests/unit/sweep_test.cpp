#include <doctest/doctest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "config/load.hpp"
#include "config/sweep_file.hpp"
#include "support.hpp"
#include "sweep/expression.hpp"
#include "sweep/sweep_runner.hpp"
#include "sweep/sweep_runner_ranking.hpp"
#include "sweep/sweep_runner_rows.hpp"

using namespace podsim;
namespace fs = std::filesystem;

namespace {

sweep::SweepOptions quiet(const fs::path& out, int jobs) {
    sweep::SweepOptions o;
    o.out_dir = out.string();
    o.jobs = jobs;
    o.progress = false;
    return o;
}

std::vector<std::size_t> indices(const fs::path& csv) {
    std::vector<std::size_t> out;
    std::istringstream lines(test::read_text(csv));
    std::string line;
    std::getline(lines, line);  // header
    while (std::getline(lines, line)) out.push_back(std::stoul(line.substr(0, line.find(','))));
    return out;
}

}  // namespace

TEST_CASE("axes expand as a cartesian product, zips vary together, dotted paths override the base") {
    auto plan = config::SweepPlan::load(test::source_path("tests/data/sweeps/small.yaml"));
    // 3 slices x 2 batches x 2 zipped pairs.
    CHECK(plan.size() == 12);
    CHECK(plan.parameter_names() ==
          std::vector<std::string>{"slice", "training.per_chip_batch", "mesh.ici", "training.remat"});
    // Row-major: the last axis (the zip) varies fastest.
    auto first = plan.make(0);
    auto second = plan.make(1);
    REQUIRE(first.ok);
    REQUIRE(second.ok);
    CHECK(first.values == std::vector<std::string>{"2x2x1", "4", "{fsdp: auto}", "full"});
    CHECK(second.values == std::vector<std::string>{"2x2x1", "4", "{data: 2, fsdp: auto}", "none"});
    CHECK(second.spec.training.remat == workload::Remat::none);
    CHECK(second.spec.mesh.ici_size_of("data") == 2);
    CHECK(second.spec.mesh.ici_size_of("fsdp") == 2);
    // per_chip_batch replaces the base's global_batch: 4 per chip x 4 chips.
    CHECK(first.spec.training.global_batch == 16);
    auto last = plan.make(11);
    CHECK(last.spec.slice.to_string() == "2x2x4");
    CHECK(last.spec.training.global_batch == 64 * 16);
}

TEST_CASE("an instance is the same whatever instances were built before it") {
    // A plan writes each instance's axis values into one tree when that is the same as a fresh
    // copy of the base (tests/data/sweeps/large.yaml: model, slice, batch, remat, framework and
    // mesh axes); an instance built after others must equal one built first by a fresh plan.
    const std::string file = test::source_path("tests/data/sweeps/large.yaml");
    auto plan = config::SweepPlan::load(file);
    std::vector<std::size_t> picked;
    for (std::size_t i = 0; i < plan.size(); i += 97) picked.push_back(i);
    picked.push_back(plan.size() - 1);
    std::vector<config::SweepPlan::Instance> in_order;
    for (std::size_t i : picked) in_order.push_back(plan.make(i, true));
    for (std::size_t k = picked.size(); k-- > 0;) {  // and again backwards, on the same plan
        auto again = plan.make(picked[k], true);
        CHECK(again.spec == in_order[k].spec);
        CHECK(again.run_yaml == in_order[k].run_yaml);
    }
    for (std::size_t k = 0; k < picked.size(); k += 4) {
        CAPTURE(picked[k]);
        auto alone = config::SweepPlan::load(file).make(picked[k], true);
        CHECK(alone.ok == in_order[k].ok);
        CHECK(alone.spec == in_order[k].spec);
        CHECK(alone.run_yaml == in_order[k].run_yaml);
        CHECK(alone.values == in_order[k].values);
        CHECK(alone.skip_reason == in_order[k].skip_reason);
    }
}

TEST_CASE("an instance made beside one that differs only in the batch equals one made alone") {
    // make_beside copies the neighbour's spec and reads only the batch again, with the checks that
    // involve it: sharding (global batch 6 does not shard over 4 chips of FSDP) and whole_run
    // (last_batch must be smaller than the batch). Every pair of instances is tried: those that
    // differ in other axes, or whose neighbour was skipped, are made whole.
    fs::path dir = test::fresh_dir("beside");
    fs::create_directories(dir);
    std::ofstream(dir / "mesh.yaml")
        << "schema: podsim.sweep/v1\nbase: " << test::source_path("configs/default.yaml")
        << "\naxes:\n  slice: [2x1x1, 2x2x1]\n"
           "  mesh: [{fsdp: auto}, {data: 2, fsdp: auto}]\n"
           "  training.global_batch: [2, 4, 6, 8]\n  training.remat: [none, full]\n";
    std::ofstream(dir / "per_chip.yaml")
        << "schema: podsim.sweep/v1\nbase: " << test::source_path("configs/default.yaml")
        << "\naxes:\n  training.per_chip_batch: [1, 3]\n  slice: [2x1x1, 2x2x1]\n"
           "  training.microbatches: [1, 2]\n";
    std::ofstream(dir / "qnli.yaml")
        << "schema: podsim.run/v1\nmodel: unit-text-standin\ntopology: tpu-v3\n"
           "slice: 1x1\nmesh: {data: 1}\ntraining: {global_batch: 8, seq_len: 128}\n"
           "whole_run: {train_steps: 10, last_batch: 5}\n";
    std::ofstream(dir / "run.yaml")
        << "schema: podsim.sweep/v1\nbase: qnli.yaml\naxes:\n"
           "  training.global_batch: [4, 8, 16]\n  training.optimizer: [adamw, sgd]\n";
    std::size_t skipped = 0, compared = 0;
    for (const char* name : {"mesh.yaml", "per_chip.yaml", "run.yaml"}) {
        const std::string file = (dir / name).string();
        auto plan = config::SweepPlan::load(file);
        std::vector<config::SweepPlan::Instance> alone;
        for (std::size_t i = 0; i < plan.size(); ++i) {
            alone.push_back(config::SweepPlan::load(file).make(i));
            skipped += alone.back().ok ? 0 : 1;
        }
        for (std::size_t j = 0; j < plan.size(); ++j) {
            const auto neighbour = plan.make(j);
            for (std::size_t i = 0; i < plan.size(); ++i) {
                CAPTURE(name);
                CAPTURE(i);
                CAPTURE(j);
                const auto beside = plan.make_beside(i, j, neighbour);
                CHECK(beside.ok == alone[i].ok);
                CHECK(beside.spec == alone[i].spec);
                CHECK(beside.skip_reason == alone[i].skip_reason);
                CHECK(beside.values == alone[i].values);
                ++compared;
            }
        }
    }
    CHECK(compared == 32 * 32 + 8 * 8 + 6 * 6);
    CHECK(skipped > 0);
}

TEST_CASE("a relative model path in the base is written absolute into every instance") {
    // The plan reuses one tree for these axes and rewrites the path only in the first instance it
    // makes: every later one must still carry it, whatever the order.
    fs::path dir = test::fresh_dir("relative");
    fs::create_directories(dir / "sub");
    fs::copy_file(test::source_path("models/gpt2-small.yaml"), dir / "sub" / "m.yaml");
    std::ofstream(dir / "base.yaml")
        << "schema: podsim.run/v1\nmodel: sub/m.yaml\ntopology: tpu-v4\n"
           "slice: 2x2x1\nmesh: {fsdp: auto}\ntraining: {global_batch: 8, seq_len: 1024}\n";
    std::ofstream(dir / "s.yaml") << "schema: podsim.sweep/v1\nbase: base.yaml\naxes:\n"
                                     "  slice: [2x2x1, 2x2x2]\n  training.global_batch: [8, 16]\n";
    auto plan = config::SweepPlan::load((dir / "s.yaml").string());
    const std::string absolute = fs::weakly_canonical(dir / "sub" / "m.yaml").string();
    for (std::size_t i : {0, 1, 3, 2, 0}) {
        CAPTURE(i);
        auto instance = plan.make(i, true);
        CHECK(instance.ok);
        CHECK(instance.run_yaml.find("model: " + absolute) != std::string::npos);
        CHECK(instance.spec.model.name == "gpt2-small");
    }
}

TEST_CASE("invalid combinations are skipped with their reason, not fatal") {
    auto plan = config::SweepPlan::load(test::source_path("tests/data/sweeps/skips.yaml"));
    auto summary = sweep::run_sweep(plan, quiet(test::fresh_dir("skips"), 1));
    CHECK(summary.evaluated == 1);
    REQUIRE(summary.skipped.size() == 1);
    CHECK(summary.skipped.begin()->first.find("mesh product is 8 but there are 4 chips") !=
          std::string::npos);
}

TEST_CASE("a value that shards only with other axes' values is a skipped row, not a sweep error") {
    // Global batch 2 does not shard over the base's 4 chips, but it does over 2: the value is valid,
    // so the sweep loads and only the combination with 4 chips is skipped.
    fs::path dir = test::fresh_dir("combination");
    fs::create_directories(dir);
    std::ofstream(dir / "s.yaml") << "schema: podsim.sweep/v1\nbase: "
                                  << test::source_path("configs/default.yaml")
                                  << "\naxes:\n  slice: [2x1x1, 2x2x1]\n  mesh: [{fsdp: auto}]\n"
                                     "  training.global_batch: [2]\n";
    auto plan = config::SweepPlan::load((dir / "s.yaml").string());
    REQUIRE(plan.size() == 2);
    CHECK(plan.make(0).ok);
    auto second = plan.make(1);
    CHECK_FALSE(second.ok);
    CHECK(second.skip_reason.find("must be divisible") != std::string::npos);
}

TEST_CASE("a value that is valid only beside another axis's value is a skipped row, not a sweep error") {
    // num_experts_per_tok 9 exceeds the base's num_experts (8) but not 16, and heads 12 divide
    // d_model 768 but not the base's 512 (in a zip row or against another axis): each value
    // fails only some rows. top-k 0 is wrong beside any num_experts and stays a sweep error.
    fs::path dir = test::fresh_dir("cross-key");
    fs::create_directories(dir);
    const std::string base =
        "base:\n  schema: podsim.run/v1\n  model: {schema: podsim.model/v1, name: m, family: decoder, "
        "layers: 8,"
        " d_model: 512, heads: 8, d_ff: 1024, activation: swiglu, vocab: 32000, num_experts: 8,"
        " num_experts_per_tok: 2}\n  topology: tpu-v4\n  slice: 2x2x2\n  mesh: {expert: 8}\n"
        "  training: {global_batch: 32, seq_len: 256, sparse_matmul: true}\n";
    std::ofstream(dir / "s.yaml")
        << "schema: podsim.sweep/v1\n"
        << base
        << "axes:\n  model.num_experts: [8, 16]\n  model.num_experts_per_tok: [2, 9]\n"
           "zip:\n  model.d_model: [512, 768]\n  model.heads: [8, 12]\n";
    auto plan = config::SweepPlan::load((dir / "s.yaml").string());
    REQUIRE(plan.size() == 8);
    // Index = experts x 4 + top-k x 2 + zip row (the first axis varies slowest).
    CHECK(plan.make(0).ok);    // 8 experts, top-2, d_model 512
    CHECK(plan.make(1).ok);    // 8 experts, top-2, d_model 768 and 12 heads
    auto over = plan.make(2);  // 8 experts, top-9
    CHECK_FALSE(over.ok);
    CHECK(over.skip_reason.find("num_experts_per_tok (9) exceeds num_experts (8)") != std::string::npos);
    CHECK(plan.make(6).ok);  // 16 experts, top-9
    CHECK(plan.make(7).ok);
    std::ofstream(dir / "zero.yaml") << "schema: podsim.sweep/v1\n"
                                     << base << "axes:\n  model.num_experts: [8, 16]\n"
                                     << "  model.num_experts_per_tok: [0, 2]\n";
    try {
        (void)config::SweepPlan::load((dir / "zero.yaml").string());
        FAIL("accepted num_experts_per_tok 0");
    } catch (const core::UserError& e) {
        std::string text = e.diagnostics().to_string();
        CHECK(text.find("axes.model.num_experts_per_tok: must be positive, found 0") != std::string::npos);
        CHECK(e.diagnostics().size() == 1);
    }
}

TEST_CASE("an axis into a model the base names sets that key of the named model, as --set does") {
    // configs/default.yaml names `model: gpt2-2b`: model.layers replaced the model by {layers: 4}
    // (every row skipped for the missing schema, name, d_model...), and model.num_experts_per_tok
    // on mixtral-8x7b was refused as a key of a dense model.
    fs::path dir = test::fresh_dir("named-model");
    fs::create_directories(dir);
    std::ofstream(dir / "s.yaml") << "schema: podsim.sweep/v1\nbase: "
                                  << test::source_path("configs/default.yaml")
                                  << "\naxes:\n  model.layers: [4, 8]\n";
    auto plan = config::SweepPlan::load((dir / "s.yaml").string());
    auto four = plan.make(0);
    REQUIRE(four.ok);
    const auto gpt2 = config::load_model_file(test::source_path("models/gpt2-2b.yaml"));
    CHECK(four.spec.model.layers == 4);
    CHECK(four.spec.model.d_model == gpt2.d_model);
    CHECK(four.spec.model.name == gpt2.name);
    std::ofstream(dir / "moe.yaml") << "schema: podsim.sweep/v1\nbase: "
                                    << test::source_path("configs/mixtral-8x7b-ep4-v6e-256.yaml")
                                    << "\naxes:\n  model.num_experts_per_tok: [1, 2]\n";
    auto moe = config::SweepPlan::load((dir / "moe.yaml").string());
    auto top1 = moe.make(0);
    REQUIRE(top1.ok);
    CHECK(top1.spec.model.experts == 8);
    CHECK(top1.spec.model.experts_per_token == 1);
    // A model axis beside a key inside the model: the key among each named model's (it replaced the
    // named model by {num_experts: N}, and every row was skipped for the missing schema, name, ...).
    std::ofstream(dir / "models.yaml")
        << "schema: podsim.sweep/v1\nbase: " << test::source_path("configs/mixtral-8x7b-ep4-v6e-256.yaml")
        << "\naxes:\n  model.num_experts: [8, 16]\n"
           "  model: [mixtral-8x7b, llama4-scout-17b-16e]\n";
    auto models = config::SweepPlan::load((dir / "models.yaml").string());
    REQUIRE(models.size() == 4);
    const auto scout = config::load_model_file(test::source_path("models/llama4-scout-17b-16e.yaml"));
    for (std::size_t i = 0; i < models.size(); ++i) {
        auto instance = models.make(i);
        REQUIRE(instance.ok);
        CHECK(instance.spec.model.experts == (i < 2 ? 8 : 16));
        CHECK(instance.spec.model.name == (i % 2 == 0 ? std::string("mixtral-8x7b") : scout.name));
    }
}

TEST_CASE("a bad sweep file reports every error with its position") {
    try {
        auto plan = config::SweepPlan::load(test::source_path("tests/data/sweeps/bad.yaml"));
        sweep::run_sweep(plan, quiet(test::fresh_dir("bad"), 1));
        FAIL("accepted a bad sweep file");
    } catch (const core::UserError& e) {
        std::string text = e.diagnostics().to_string();
        CHECK(
            text.find("bad.yaml:4:3: error: axes.training.remt: 'training.remt' is not a key of a run config "
                      "(did you mean 'training.remat'?)") != std::string::npos);
        CHECK(text.find("has 1 values but the other lists of this zip have 2") != std::string::npos);
    }
    // Keep and sort are checked once the file itself is valid.
    auto write = [](const std::string& body) {
        fs::path p = test::fresh_dir("badkeep");
        fs::create_directories(p);
        std::ofstream(p / "s.yaml") << "schema: podsim.sweep/v1\nbase: "
                                    << test::source_path("configs/default.yaml")
                                    << "\naxes: {training.remat: [full]}\n"
                                    << body;
        return (p / "s.yaml").string();
    };
    auto plan = config::SweepPlan::load(write("keep: [fits, mfu >> 0.3, mfuu > 0.2]\nsort: speed\n"));
    try {
        sweep::run_sweep(plan, quiet(test::fresh_dir("badkeep-out"), 1));
        FAIL("accepted bad keep/sort");
    } catch (const core::UserError& e) {
        std::string text = e.diagnostics().to_string();
        CHECK(text.find(":4:14: error: keep: 'mfu >> 0.3': unexpected '> 0.3'") != std::string::npos);
        CHECK(text.find("unknown field 'mfuu' (did you mean 'mfu'?)") != std::string::npos);
        CHECK(text.find("sort: 'speed' is not a report field") != std::string::npos);
    }
}

TEST_CASE("keep expressions") {
    std::string error;
    auto e = sweep::parse_row_expression("fits and (mfu > 0.4 or peak_bytes < 30 GiB)", error);
    REQUIRE(e);
    report::RunReport report;
    report.memory.fits = true;
    report.mfu = 0.3;
    report.memory.peak_bytes = 20.0 * 1024 * 1024 * 1024;
    sweep::Row r;
    r.set_report(report);
    CHECK(e->evaluate(r.numbers));
    report.memory.peak_bytes = 31.0 * 1024 * 1024 * 1024;
    r.set_report(report);
    CHECK_FALSE(e->evaluate(r.numbers));
    CHECK_FALSE(sweep::parse_row_expression("mfu >", error));
    CHECK_FALSE(sweep::parse_row_expression("speed > 1", error));
}

TEST_CASE("same sweep, same CSV, whatever --jobs; shards merged equal the whole") {
    auto plan = config::SweepPlan::load(test::source_path("tests/data/sweeps/small.yaml"));
    fs::path one = test::fresh_dir("jobs1"), two = test::fresh_dir("jobs2"),
             merged = test::fresh_dir("merged");
    auto a = sweep::run_sweep(plan, quiet(one, 1));
    auto b = sweep::run_sweep(plan, quiet(two, 2));
    CHECK(test::read_text(one / "results.csv") == test::read_text(two / "results.csv"));
    CHECK(test::read_text(one / "results.jsonl") == test::read_text(two / "results.jsonl"));
    CHECK(a.ranked.front().index == b.ranked.front().index);

    std::vector<std::string> shard_dirs;
    for (int k = 1; k <= 3; ++k) {
        fs::path dir = test::fresh_dir(fmt::format("shard{}", k));
        auto options = quiet(dir, 2);
        options.shard_index = k;
        options.shard_count = 3;
        auto s = sweep::run_sweep(plan, options);
        CHECK(s.total == 4);
        for (std::size_t i : indices(dir / "results.csv")) CHECK(static_cast<int>(i % 3) == k - 1);
        shard_dirs.push_back(dir.string());
    }
    sweep::merge_shards(plan, shard_dirs, merged.string());
    CHECK(test::read_text(merged / "results.csv") == test::read_text(one / "results.csv"));
}

TEST_CASE("resume after an interruption: every config exactly once") {
    auto plan = config::SweepPlan::load(test::source_path("tests/data/sweeps/small.yaml"));
    fs::path dir = test::fresh_dir("resume"), whole = test::fresh_dir("whole");
    auto partial = quiet(dir, 2);
    partial.limit = 5;  // stops after 5 configs, as if killed
    sweep::run_sweep(plan, partial);
    CHECK(indices(dir / "results.csv").size() == 5);
    // A half-written last line, as a kill mid-write leaves it.
    std::ofstream(dir / "results.csv", std::ios::app) << "5,ok,,2x2x1,\"{fsdp";
    auto resumed = quiet(dir, 2);
    resumed.resume = true;
    auto s = sweep::run_sweep(plan, resumed);
    CHECK(s.resumed == 5);
    auto done = indices(dir / "results.csv");
    CHECK(done.size() == 12);
    CHECK(std::set<std::size_t>(done.begin(), done.end()).size() == 12);
    sweep::run_sweep(plan, quiet(whole, 1));
    CHECK(test::read_text(dir / "results.csv") == test::read_text(whole / "results.csv"));
    CHECK(test::read_text(dir / "results.jsonl") == test::read_text(whole / "results.jsonl"));
}

TEST_CASE("a sweep process killed mid-run resumes to a complete result") {
    const std::string sweep_file = test::source_path("tests/data/sweeps/large.yaml");
    fs::path dir = test::fresh_dir("killed");
    pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {
        ::execl(PODSIM_BINARY, PODSIM_BINARY, "sweep", sweep_file.c_str(), "--out", dir.c_str(), "--jobs",
                "2", "--no-progress", static_cast<char*>(nullptr));
        std::_Exit(127);
    }
    // Kill it once it has written some rows (or after 5 s at most).
    for (int i = 0; i < 500; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        if (fs::exists(dir / "results.csv") && fs::file_size(dir / "results.csv") > 20000) break;
    }
    ::kill(child, SIGKILL);
    int status = 0;
    ::waitpid(child, &status, 0);
    std::size_t before = indices(dir / "results.csv").size();
    MESSAGE("killed after " << before << " configs");
    std::string resume = std::string(PODSIM_BINARY) + " sweep " + sweep_file + " --out " + dir.string() +
                         " --resume --no-progress --jobs 2 > /dev/null";
    REQUIRE(std::system(resume.c_str()) == 0);
    auto plan = config::SweepPlan::load(sweep_file);
    auto done = indices(dir / "results.csv");
    CHECK(done.size() == plan.size());
    CHECK(std::set<std::size_t>(done.begin(), done.end()).size() == plan.size());
    for (std::size_t i = 0; i < done.size(); ++i) CHECK(done[i] == i);
}

TEST_CASE("CSV writes whole numbers as integers and reads them back exactly") {
    // Byte counts above 1e9 used to print as 1.07632077e+10 (9 significant digits), losing bytes.
    auto plan = config::SweepPlan::load(test::source_path("tests/data/sweeps/small.yaml"));
    fs::path out = test::fresh_dir("integers");
    auto options = quiet(out, 1);
    options.limit = 1;
    auto summary = sweep::run_sweep(plan, options);
    REQUIRE(!summary.ranked.empty());
    const sweep::Row& row = summary.ranked.front();
    REQUIRE(row.number("capacity_bytes") > 1e9);  // HBM of a TPU chip
    std::string csv = test::read_text(out / "results.csv");
    CHECK(csv.find("e+") == std::string::npos);
    CHECK(csv.find(fmt::format(",{},", std::llround(row.number("capacity_bytes")))) != std::string::npos);
    CHECK(csv.find(fmt::format(",{},", std::llround(row.number("peak_bytes")))) != std::string::npos);
}
