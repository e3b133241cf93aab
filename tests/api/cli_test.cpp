// The command line as a client of the API: --set, `-` for standard input, --shard auto from a job
// array's environment, and sweep merge refusing a partial set. Runs the built podsim binary.
#include <doctest/doctest.h>

#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
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
        CHECK(read(dir / "shard.txt") == fmt::format("shard {}/3\nconfigs 6\n", id));
        dirs.push_back(dir);
    }
    fs::path merged = fresh_dir("merged");
    auto merge = podsim(fmt::format("sweep merge {} {} {} {} --out {}", sweep, dirs[0].string(),
                                    dirs[1].string(), dirs[2].string(), merged.string()));
    CHECK(merge.code == 0);
    CHECK(read(merged / "results.csv") == read(whole / "results.csv"));

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
    CHECK(read(k8s / "shard.txt") == "shard 2/2\nconfigs 6\n");
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
