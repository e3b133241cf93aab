// The command line as a client of the API: --set, `-` for standard input, --shard auto from a job
// array's environment, and sweep merge refusing a partial set. Runs the built podsim binary.
#include <doctest/doctest.h>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/format.h>

namespace fs = std::filesystem;

namespace {

std::string source_path(const std::string& relative) {
    return std::string(PODSIM_SOURCE_DIR) + "/" + relative;
}

struct Result {
    int code = -1;
    std::string output;  // stdout and stderr
};

// Runs `podsim ARGS` through the shell, with `environment` (VAR=value ...) in front.
Result podsim(const std::string& args, const std::string& environment = "") {
    std::string command = fmt::format("env -u SLURM_ARRAY_TASK_ID -u JOB_COMPLETION_INDEX {} {} {} 2>&1",
                                      environment, PODSIM_BINARY, args);
    Result r;
    FILE* pipe = ::popen(command.c_str(), "r");
    REQUIRE(pipe != nullptr);
    std::array<char, 4096> buffer{};
    while (std::size_t n = std::fread(buffer.data(), 1, buffer.size(), pipe))
        r.output.append(buffer.data(), n);
    int status = ::pclose(pipe);
    r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    return r;
}

fs::path fresh_dir(const std::string& name) {
    fs::path dir = fs::temp_directory_path() / fmt::format("podsim-cli-{}-{}", name, ::getpid());
    fs::remove_all(dir);
    return dir;
}

std::string read(const fs::path& p) {
    std::ifstream in(p);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

}  // namespace

TEST_CASE("--set changes the config, - reads it from standard input") {
    const std::string config = source_path("configs/default.yaml");
    auto plain = podsim("run " + config + " --format json");
    REQUIRE(plain.code == 0);
    auto stdin_run = podsim("run - --format json < " + config);
    CHECK(stdin_run.code == 0);
    CHECK(stdin_run.output == plain.output);
    // default.yaml at global batch 128 = per-chip batch 32 on 4 chips.
    auto per_chip = podsim("run " + config + " --format json --set training.per_chip_batch=32");
    CHECK(per_chip.output == plain.output);
    auto doubled = podsim("run " + config + " --format json --set training.global_batch=256");
    CHECK(doubled.code == 0);
    CHECK(doubled.output.find("\"tokens_per_step\": 262144") != std::string::npos);  // 256 x 1024

    auto checked = podsim("check - --set slice=2x2x2 --set 'mesh={fsdp: 8}' < " + config);
    CHECK(checked.code == 0);
    CHECK(checked.output == "-: ok (gpt2-2b on tpu-v4 2x2x2, mesh ici{fsdp=8})\n");

    auto bad = podsim("check " + config + " --set training.global_bach=256 --set slices");
    CHECK(bad.code == 2);
    CHECK(bad.output ==
          "--set slices: error: expected key.path=value (e.g. training.global_batch=256)\n"
          "podsim: 1 error\n");
    bad = podsim("check " + config + " --set training.global_bach=256");
    CHECK(bad.output ==
          "--set training.global_bach=256: error: training.global_bach: 'training.global_bach' is not a key "
          "of a "
          "run config (did you mean 'training.global_batch'?)\n"
          "podsim: 1 error\n");
}

TEST_CASE("--shard auto from a Slurm array or a Kubernetes Indexed Job, then merge") {
    const std::string sweep = source_path("configs/sweeps/vit-cifar-mesh.yaml");  // 6 configs
    fs::path whole = fresh_dir("whole");
    REQUIRE(podsim(fmt::format("sweep {} --out {} --no-progress", sweep, whole.string())).code == 0);

    // sbatch --array=1-3: Slurm numbers the tasks 1, 2, 3.
    std::vector<fs::path> dirs;
    for (int id = 1; id <= 3; ++id) {
        fs::path dir = fresh_dir(fmt::format("slurm{}", id));
        auto r = podsim(fmt::format("sweep {} --shard auto --out {} --no-progress", sweep, dir.string()),
                        fmt::format("SLURM_ARRAY_TASK_ID={} SLURM_ARRAY_TASK_MIN=1 SLURM_ARRAY_TASK_MAX=3 "
                                    "SLURM_ARRAY_TASK_COUNT=3",
                                    id));
        CHECK(r.code == 0);
        CHECK(r.output.find(fmt::format("podsim sweep: shard {}/3 (Slurm array task {})", id, id)) !=
              std::string::npos);
        CHECK(read(dir / "shard.txt").starts_with(fmt::format("shard {}/3\nconfigs 6\nsweep ", id)));
        dirs.push_back(dir);
    }
    fs::path merged = fresh_dir("merged");
    auto merge = podsim(fmt::format("sweep merge {} {} {} {} --out {}", sweep, dirs[0].string(),
                                    dirs[1].string(), dirs[2].string(), merged.string()));
    CHECK(merge.code == 0);
    CHECK(read(merged / "results.csv") == read(whole / "results.csv"));
    // The JSON lines too, byte for byte: the shards' own lines, not numbers read back from the CSV's
    // 9 significant digits.
    CHECK(read(merged / "results.jsonl") == read(whole / "results.jsonl"));

    // A missing shard and a doubled one are listed, and nothing is merged.
    fs::path partial = fresh_dir("partial");
    merge = podsim(fmt::format("sweep merge {} {} {} --out {}", sweep, dirs[0].string(), dirs[0].string(),
                               partial.string()));
    CHECK(merge.code == 2);
    CHECK(merge.output.find(fmt::format("podsim sweep merge: error: shard 1/3 given twice: {} and {}",
                                        dirs[0].string(), dirs[0].string())) != std::string::npos);
    CHECK(merge.output.find("podsim sweep merge: error: missing shards 2/3, 3/3") != std::string::npos);
    CHECK(merge.output.find("podsim sweep merge: error: 4 of 6 configs have no row (index 1, 2, 4, 5)") !=
          std::string::npos);
    CHECK_FALSE(fs::exists(partial / "results.csv"));
    // --partial merges what is there and says what is missing.
    merge = podsim(
        fmt::format("sweep merge {} {} --out {} --partial", sweep, dirs[0].string(), partial.string()));
    CHECK(merge.code == 0);
    CHECK(merge.output.find("podsim sweep merge: warning: missing shards 2/3, 3/3") != std::string::npos);

    // Kubernetes: JOB_COMPLETION_INDEX 0..N-1, the count from --shard-count.
    fs::path k8s = fresh_dir("k8s");
    auto r = podsim(
        fmt::format("sweep {} --shard auto --shard-count 2 --out {} --no-progress", sweep, k8s.string()),
        "JOB_COMPLETION_INDEX=1");
    CHECK(r.code == 0);
    CHECK(read(k8s / "shard.txt").starts_with("shard 2/2\nconfigs 6\nsweep "));
    r = podsim(fmt::format("sweep {} --shard auto --no-progress", sweep), "JOB_COMPLETION_INDEX=1");
    CHECK(r.code == 2);
    CHECK(r.output.find("podsim sweep: error: --shard-count: JOB_COMPLETION_INDEX is set") !=
          std::string::npos);
    r = podsim(fmt::format("sweep {} --shard auto --no-progress", sweep));
    CHECK(r.code == 2);
    CHECK(r.output.find("podsim sweep: error: --shard: 'auto' found no job array in the environment") !=
          std::string::npos);
    for (const auto& d : dirs) fs::remove_all(d);
    for (const auto& d : {whole, merged, partial, k8s}) fs::remove_all(d);
}

TEST_CASE("podsim run takes a compiled module by its content; its options are refused for configs") {
    const std::string module = source_path("tests/data/xla-truth/hlo/tiny-minimal-dot.hlo.txt.gz");
    auto json = podsim("run " + module + " --topology nvidia-h200 --format json");
    REQUIRE(json.code == 0);
    CHECK(json.output.find("\"schema\": \"podsim.report/v1\"") != std::string::npos);
    auto dump = podsim("run " + module + " --topology nvidia-h200 --dump program");
    CHECK(dump.code == 0);
    CHECK(dump.output.find("loop_convert_fusion.15") != std::string::npos);
    const fs::path dir = fresh_dir("hlo-trace");
    fs::create_directories(dir);
    auto traced = podsim("run " + module + " --topology nvidia-h200 --trace " + (dir / "t.json").string());
    CHECK(traced.code == 0);
    CHECK(read(dir / "t.json").find("\"loop_convert_fusion.15\"") != std::string::npos);
    fs::remove_all(dir);
    // Options of modules on a config, of configs on a module: exit 2 with the option named.
    auto topology = podsim("run " + source_path("configs/default.yaml") + " --topology tpu-v4");
    CHECK(topology.code == 2);
    CHECK(topology.output.find("--topology") != std::string::npos);
    auto set = podsim("run " + module + " --set training.global_batch=8");
    CHECK(set.code == 2);
    CHECK(set.output.find("--set") != std::string::npos);
    auto slice = podsim("run " + module + " --topology nvidia-h200 --slice 2x2");
    CHECK(slice.code == 2);
}

namespace {

std::string finding(const std::string& name) {
    return source_path("tests/errors/findings/" + name);
}

bool contains(const std::string& text, const std::string& part) {
    return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("--resume refuses a directory that holds another sweep's or another shard's results") {
    fs::path dir = fresh_dir("resume");
    REQUIRE(podsim(fmt::format("sweep {} --out {} --no-progress", finding("sweep_small.yaml"), dir.string()))
                .code == 0);
    const std::string csv = read(dir / "results.csv"), jsonl = read(dir / "results.jsonl"),
                      record = read(dir / "shard.txt");
    struct Other {
        const char* sweep;
        const char* says;
    };
    for (const Other& other :
         {Other{"sweep_resume_other_sweep_B.yaml", "its swept parameters are mesh, training.global_batch; "},
          Other{"sweep_resume_more_params_D.yaml",
                "sweeps training.global_batch, training.remat, training.optimizer"},
          Other{"sweep_resume_fewer_params_C.yaml", "sweeps training.global_batch\n"}}) {
        CAPTURE(other.sweep);
        auto r = podsim(
            fmt::format("sweep {} --out {} --resume --no-progress", finding(other.sweep), dir.string()));
        CHECK(r.code == 2);
        CHECK(contains(r.output, other.says));
        if (std::string(other.sweep) != "sweep_resume_other_sweep_B.yaml")  // B has 6 configs too
            CHECK(contains(r.output, "it holds a sweep of 6 configs"));
        CHECK(contains(r.output, "its sweep (fingerprint "));
        CHECK(contains(r.output, "the directory holds another sweep's results; nothing there was changed"));
        // Nothing there was touched.
        CHECK(read(dir / "results.csv") == csv);
        CHECK(read(dir / "results.jsonl") == jsonl);
        CHECK(read(dir / "shard.txt") == record);
    }
    // The same sweep with other values behind the same parameters: its rows would be the wrong ones.
    fs::path edited = fresh_dir("resume-edited");
    fs::create_directories(edited);
    std::ofstream(edited / "sweep.yaml") << "schema: podsim.sweep/v1\nbase: " << finding("base-vit.yaml")
                                         << "\naxes:\n  mesh: [{data: 8}, {data: 4, tensor: 2}]\n"
                                            "  training.global_batch: [64, 1024, 4096]\n";
    auto r = podsim(fmt::format("sweep {} --out {} --resume --no-progress", (edited / "sweep.yaml").string(),
                                dir.string()));
    CHECK(r.code == 2);
    CHECK(contains(r.output, "2 of its rows hold other values than"));
    CHECK(contains(r.output,
                   "its config 0 is mesh={data: 8}, training.global_batch=128; here mesh={data: 8}, "
                   "training.global_batch=64"));
    CHECK(read(dir / "results.csv") == csv);

    // Another shard of the same sweep.
    fs::path shard = fresh_dir("resume-shard");
    REQUIRE(podsim(fmt::format("sweep {} --out {} --shard 1/2 --no-progress", finding("sweep_small.yaml"),
                               shard.string()))
                .code == 0);
    r = podsim(fmt::format("sweep {} --out {} --shard 2/2 --resume --no-progress",
                           finding("sweep_small.yaml"), shard.string()));
    CHECK(r.code == 2);
    CHECK(contains(r.output, "it holds shard 1/2; this run is shard 2/2"));
    CHECK(read(shard / "shard.txt").starts_with("shard 1/2\n"));

    // The case: a MaxText sweep's directory resumed with the GPT-2 sweep.
    fs::path maxtext = fresh_dir("resume-maxtext");
    REQUIRE(podsim(fmt::format("sweep {} --out {} --limit 2 --no-progress",
                               source_path("configs/sweeps/maxtext-22b-fsdp-tensor.yaml"), maxtext.string()))
                .code == 0);
    r = podsim(fmt::format("sweep {} --out {} --resume --no-progress",
                           source_path("configs/sweeps/gpt2-fsdp-slices.yaml"), maxtext.string()));
    CHECK(r.code == 2);
    CHECK(contains(r.output, "its swept parameters are"));
    CHECK(contains(r.output, "it holds a sweep of"));

    // --resume needs the directory to resume.
    r = podsim(fmt::format("sweep {} --resume --no-progress", finding("sweep_small.yaml")));
    CHECK(r.code == 2);
    CHECK(contains(r.output, "podsim sweep: error: --resume: needs --out"));

    // The same sweep resumes: the rows of an interrupted run, then the rest, as one run writes them.
    fs::path interrupted = fresh_dir("resume-same");
    REQUIRE(podsim(fmt::format("sweep {} --out {} --limit 2 --no-progress", finding("sweep_small.yaml"),
                               interrupted.string()))
                .code == 0);
    r = podsim(fmt::format("sweep {} --out {} --resume --no-progress", finding("sweep_small.yaml"),
                           interrupted.string()));
    CHECK(r.code == 0);
    CHECK(read(interrupted / "results.csv") == csv);
    CHECK(read(interrupted / "results.jsonl") == jsonl);
    for (const auto& d : {dir, edited, shard, maxtext, interrupted}) fs::remove_all(d);
}

TEST_CASE("messages that say what is wrong, not what follows from it") {
    const std::string config = source_path("configs/default.yaml");
    // A key of the named model.
    auto plain = podsim("run " + config + " --format json");
    auto deeper = podsim("run " + config + " --format json --set model.layers=48");
    CHECK(deeper.code == 0);
    CHECK(contains(deeper.output, "\"params\": "));
    CHECK(deeper.output != plain.output);
    // A misspelt axis or a size that is no integer: that, and not the product of what is left.
    for (const char* mesh : {"mesh={fdsp: 4}", "mesh={fsdp: 4.0}"}) {
        CAPTURE(mesh);
        auto r = podsim("check " + config + " --set '" + mesh + "'");
        CHECK(r.code == 2);
        CHECK_FALSE(contains(r.output, "mesh product"));
    }
    CHECK(contains(
        podsim("check " + config + " --set 'mesh={fdsp: 4}'").output,
        "unknown mesh axis 'fdsp': axes are data, fsdp, tensor, pipeline and expert (did you mean 'fsdp'?)"));
    // The shorthand's axes as keys.
    auto axis = podsim("check " + config + " --set mesh.fsdp=4");
    CHECK(axis.code == 0);
    CHECK(contains(axis.output, "mesh ici{fsdp=4}"));
    // No suggestion that only changes a version number; the known names instead.
    auto v7 = podsim("check " + config + " --set topology=tpu-v7x");
    CHECK(v7.code == 2);
    CHECK_FALSE(contains(v7.output, "did you mean"));
    CHECK(contains(v7.output,
                   "unknown topology 'tpu-v7x': no topologies/tpu-v7x.yaml; the known topologies are "
                   "nvidia-h100, nvidia-h200, tpu-v2, tpu-v3, tpu-v4"));
    CHECK(contains(podsim("check " + config + " --set topology=tpu-v44").output, "the known topologies are"));
    CHECK(contains(podsim("check " + config + " --set topology=tpuv4").output, "(did you mean 'tpu-v4'?)"));
    // A calibration parameter misspelt, given twice, or none.
    const std::string calibrate =
        "calibrate " + config + " --profile " + finding("metrics_report.txt") + " --params ";
    auto misspelt = podsim(calibrate + "mxu_eficiency");
    CHECK(misspelt.code == 2);
    CHECK(contains(misspelt.output, "unknown parameter 'mxu_eficiency' (did you mean 'mxu_efficiency'?)"));
    auto twice = podsim(calibrate + "mxu_efficiency,mxu_efficiency");
    CHECK(twice.code == 2);
    CHECK(contains(twice.output, "'mxu_efficiency' is given twice"));
    CHECK(podsim(calibrate + "','").code == 2);
    // A Cloud TPU name as the slice, and a mesh sized for one on twice the chips.
    auto name = podsim("check " + config + " --set slice=v4-128");
    CHECK(name.code == 2);
    CHECK(contains(name.output,
                   "(v4-128 is 64 chips: Cloud TPU names count TensorCores, 2 per chip of tpu-v4; "
                   "as a shape, e.g. 4x4x4)"));
    auto doubled = podsim("check " + config + " --set slice=4x4x8 --set 'mesh={fsdp: 64}'");
    CHECK(doubled.code == 2);
    CHECK(contains(doubled.output,
                   "mesh product is 64 but there are 128 chips in slice 4x4x8 (if this is meant as "
                   "a v4-128: Cloud TPU names count TensorCores, 2 per chip, so a v4-128 is 64 "
                   "chips, half of slice 4x4x8)"));
}

TEST_CASE("exit 0 only when something was done: empty suites, cut reports, unrelated profiles, whole runs") {
    const std::string config = source_path("configs/default.yaml");
    fs::path empty = fresh_dir("empty-suite");
    fs::create_directories(empty);
    auto suite = podsim("validate --suite " + empty.string());
    CHECK(suite.code == 2);
    CHECK(contains(suite.output, "no case to validate"));
    // A metrics report cut in a time field, or before ExecuteTime.
    const std::string report = read(finding("metrics_report.txt"));
    const std::string in_time = report.substr(0, report.find("s550ms") + 1);  // "... 03m29s"
    const std::string before_execute = report.substr(0, report.find("Metric: ExecuteTime"));
    for (const auto& cut : {in_time, before_execute, report.substr(0, report.find("  Accumulator: 03m"))}) {
        std::ofstream(empty / "cut.txt") << cut;
        auto r = podsim("validate " + config + " --profile " + (empty / "cut.txt").string());
        CHECK(r.code == 2);
        CHECK(contains(r.output, "cut off"));
    }
    // A profile of something else: said, with what differs.
    auto other = podsim("validate " + config + " --profile " +
                        source_path("tests/data/xprof__tpu_inference_2.xplane.pb"));
    CHECK(other.code == 0);
    CHECK(contains(other.output,
                   "warning: the profile does not look like a run of this config: matmul is 80% of the "
                   "predicted step but absent from the profile"));
    // --metrics-report without a whole run, or with --dump.
    auto metrics = podsim("run " + config + " --metrics-report " + (empty / "m.txt").string());
    CHECK(metrics.code == 2);
    CHECK(contains(metrics.output, "--metrics-report: needs a config with a whole_run: block"));
    CHECK_FALSE(fs::exists(empty / "m.txt"));
    auto dumped = podsim("run " + source_path("configs/unit-qnli-train.yaml") +
                         " --dump opgraph --metrics-report " + (empty / "m.txt").string());
    CHECK(dumped.code == 2);
    fs::remove_all(empty);
}

TEST_CASE("docs/sweep-directories.md: the resume example prints what the page shows") {
    // The page's block: commands ($ ...) run from the source tree with D a fresh directory, then the
    // last command's output, with that directory written as D.
    const std::string page = read(source_path("docs/sweep-directories.md"));
    const auto start = page.find("```\n$ podsim sweep");
    REQUIRE(start != std::string::npos);
    const std::string block = page.substr(start + 4, page.find("```\n", start + 4) - start - 4);
    std::vector<std::string> commands;
    std::string expected;
    std::istringstream lines(block);
    for (std::string line; std::getline(lines, line);) {
        if (line.starts_with("$ podsim "))
            commands.push_back(line.substr(9));
        else
            expected += line + "\n";
    }
    REQUIRE(commands.size() == 2);
    const fs::path dir = fresh_dir("doc-resume");
    auto with_dir = [&](std::string command) {
        const auto at = command.find(" --out D ");
        REQUIRE(at != std::string::npos);
        return command.replace(at, 9, " --out " + dir.string() + " ");
    };
    std::string output;
    for (const auto& command : commands)
        output = podsim("--version > /dev/null; cd " + std::string(PODSIM_SOURCE_DIR) + " && " +
                        PODSIM_BINARY + " " + with_dir(command))
                     .output;
    for (auto at = output.find(dir.string()); at != std::string::npos; at = output.find(dir.string()))
        output.replace(at, dir.string().size(), "D");
    CHECK(output == expected);
    fs::remove_all(dir);
}

TEST_CASE("collective --sweep-bytes: a range that runs backwards or past 64 doublings is an error") {
    auto backwards = podsim("collective --slice 4x4x4 --sweep-bytes 1KiB..1B");
    CHECK(backwards.code == 2);
    CHECK(backwards.output.find("--sweep-bytes: the range starts above its end (1024 > 1 bytes)") !=
          std::string::npos);
    auto endless = podsim("collective --slice 4x4x4 --sweep-bytes 1B..1e300B");
    CHECK(endless.code == 2);
    CHECK(endless.output.find("the range spans more than 64 doublings") != std::string::npos);
    auto doubling = podsim("collective --slice 4x4x4 --sweep-bytes 1KiB..4KiB");
    CHECK(doubling.code == 0);
    CHECK(doubling.output.find("\n1024,") != std::string::npos);
    CHECK(doubling.output.find("\n4096,") != std::string::npos);
}
