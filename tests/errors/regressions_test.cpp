// The fuzz findings (tests/fuzz/regressions, tests/errors/findings) through the command line, as a user
// runs them: each must end with exit 0 and a report, or exit 2 and a `FILE:...: error:` message, within
// 10 s of CPU time and 2 GB of address space. CPU time, not wall time: on a loaded 2-core CI machine
// an ASan build's wall time says more about the load than about podsim.
#include <doctest/doctest.h>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support.hpp"

namespace fs = std::filesystem;

namespace {

struct Outcome {
    int exit_code = -1;
    double seconds = 0.0;  // CPU time of the child processes
    std::string err;
};

// AddressSanitizer reserves terabytes of address space for its shadow memory, so an ASan build
// cannot run under `ulimit -v`; there the 2 GB bound is left to the fuzz targets' -rss_limit_mb.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

double children_cpu_seconds() {
    rusage usage{};
    getrusage(RUSAGE_CHILDREN, &usage);
    auto seconds = [](const timeval& t) {
        return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
    };
    return seconds(usage.ru_utime) + seconds(usage.ru_stime);
}

// Runs podsim with `args` in `dir` under `ulimit -v` (2 GiB, but for ASan builds), `ulimit -t 10`
// (CPU seconds) and, against a hang that uses no CPU, `timeout 120`; `limits` adds shell commands
// before it (another ulimit).
Outcome run_podsim(const std::string& args, const fs::path& dir, const std::string& limits = "") {
    const fs::path err =
        fs::temp_directory_path() / ("podsim-regression-" + std::to_string(::getpid()) + ".err");
    const std::string limit = kAddressSanitizer ? "" : "ulimit -v 2097152 && ";
    const std::string command = "cd '" + dir.string() + "' && " + limit + limits +
                                "ulimit -t 10 && timeout 120 " + std::string(PODSIM_BINARY) + " " + args +
                                " > /dev/null 2> '" + err.string() + "'";
    const double cpu_before = children_cpu_seconds();
    const int status = std::system(command.c_str());
    Outcome out;
    out.seconds = children_cpu_seconds() - cpu_before;
    out.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    std::ifstream in(err);
    std::stringstream text;
    text << in.rdbuf();
    out.err = text.str();
    fs::remove(err);
    return out;
}

void check_clean(const Outcome& o, const std::string& what) {
    INFO(what << ": exit " << o.exit_code << " after " << o.seconds << " s of CPU\n" << o.err);
    CHECK((o.exit_code == 0 || o.exit_code == 2));
    if (o.exit_code == 2) CHECK(o.err.find(": error: ") != std::string::npos);
    CHECK(o.err.find("internal error") == std::string::npos);
    CHECK(o.seconds < 10.0);
}

const fs::path regressions = fs::path(PODSIM_SOURCE_DIR) / "tests" / "fuzz" / "regressions";
// The command-line findings of a later campaign (sweeps, outputs, resumed directories).
const fs::path findings = fs::path(PODSIM_SOURCE_DIR) / "tests" / "errors" / "findings";

std::string quoted(const fs::path& p) {
    return "'" + p.string() + "'";
}

// An error with exit 2 that says `what`.
void check_refused(const Outcome& o, const std::string& command, const std::string& what) {
    INFO(command << ": exit " << o.exit_code << "\n" << o.err);
    CHECK(o.exit_code == 2);
    CHECK(o.err.find(": error: ") != std::string::npos);
    CHECK(o.err.find(what) != std::string::npos);
    CHECK(o.err.find("terminate") == std::string::npos);
}

fs::path scratch(const std::string& name) {
    fs::path dir =
        fs::temp_directory_path() / ("podsim-regression-" + name + "-" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
    return dir;
}

}  // namespace

TEST_CASE("every run-config reproducer ends with a report or a clear error") {
    for (const auto& entry : fs::directory_iterator(regressions / "run_config")) {
        for (const char* format : {"table", "json"}) {
            check_clean(run_podsim(std::string("run '") + entry.path().string() + "' --format " + format,
                                   PODSIM_SOURCE_DIR),
                        entry.path().filename().string());
        }
    }
}

TEST_CASE("sweep reproducers: bounded size, bounded keep expressions") {
    const fs::path dir =
        fs::temp_directory_path() / ("podsim-regression-sweep-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    fs::copy_file(fs::path(PODSIM_SOURCE_DIR) / "configs" / "default.yaml", dir / "default.yaml",
                  fs::copy_options::overwrite_existing);
    for (const auto& entry : fs::directory_iterator(regressions / "sweep")) {
        fs::copy_file(entry.path(), dir / entry.path().filename(), fs::copy_options::overwrite_existing);
        auto o = run_podsim("sweep " + entry.path().filename().string() + " --limit 1 --no-progress --jobs 1",
                            dir);
        check_clean(o, entry.path().filename().string());
        CHECK(o.exit_code == 2);  // each is a mistake in the sweep file
    }
    // 200,000 `and`-joined terms.
    std::string keep = "fits";
    for (int i = 0; i < 200'000; ++i) keep += " and fits";
    std::ofstream(dir / "long_keep.yaml")
        << "schema: podsim.sweep/v1\nbase: default.yaml\naxes: {training.remat: "
           "[full]}\nkeep: '"
        << keep << "'\n";
    auto o = run_podsim("sweep long_keep.yaml --no-progress --jobs 1", dir);
    check_clean(o, "200,000 keep terms");
    CHECK(o.err.find("the limit is 10000") != std::string::npos);
    fs::remove_all(dir);
}

TEST_CASE("profile reproducers through validate") {
    for (const auto& entry : fs::directory_iterator(regressions / "profile")) {
        check_clean(run_podsim("validate configs/default.yaml --profile '" + entry.path().string() + "'",
                               PODSIM_SOURCE_DIR),
                    entry.path().filename().string());
    }
}

TEST_CASE("non-UTF-8 ids and names become valid JSON") {
    const fs::path dir = fs::temp_directory_path() / ("podsim-regression-utf8-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    fs::copy_file(regressions / "validation" / "case_nonutf8_id.yaml", dir / "case.yaml",
                  fs::copy_options::overwrite_existing);
    auto o = run_podsim("validate --suite '" + dir.string() + "' --format json", PODSIM_SOURCE_DIR);
    INFO(o.err);
    CHECK(o.exit_code != 134);
    CHECK(o.err.find("internal error") == std::string::npos);
    CHECK(o.err.find("terminate") == std::string::npos);
    fs::remove_all(dir);
}

TEST_CASE("100,000 unknown keys are reported in well under 10 s") {
    const fs::path dir = fs::temp_directory_path() / ("podsim-regression-keys-" + std::to_string(::getpid()));
    fs::create_directories(dir);
    {
        std::ifstream base(fs::path(PODSIM_SOURCE_DIR) / "configs" / "default.yaml");
        std::ofstream out(dir / "many.yaml");
        out << base.rdbuf();
        for (int i = 0; i < 100'000; ++i) out << "k" << i << ": " << i << "\n";
    }
    auto o = run_podsim("check many.yaml", dir);
    check_clean(o, "100,000 keys");
    CHECK(o.exit_code == 2);
    fs::remove_all(dir);
}

TEST_CASE("sweeps: an --out that is no directory, any --jobs, a link too slow to simulate") {
    const fs::path dir = scratch("sweep-out");
    std::ofstream(dir / "regular") << "x\n";
    const std::string sweep = quoted(findings / "sweep_small.yaml");
    for (const std::string& out :
         {quoted(dir / "regular"), std::string("/dev/null"), std::string("/proc/podsim-new")}) {
        check_refused(run_podsim("sweep " + sweep + " --out " + out + " --no-progress", dir), out,
                      "--out: cannot write results there");
    }
    REQUIRE(run_podsim("sweep " + sweep + " --out s --no-progress", dir).exit_code == 0);
    check_refused(run_podsim("sweep merge " + sweep + " s --out regular", dir), "merge --out regular",
                  "--out: cannot write results there");
    // Jobs: at most what runs at once; none or fewer is a mistake.
    for (const char* jobs : {"50000", "2147483647"}) {
        auto o = run_podsim("sweep " + sweep + " --jobs " + jobs + " --no-progress", dir);
        check_clean(o, std::string("--jobs ") + jobs);
        CHECK(o.exit_code == 0);
    }
    for (const char* jobs : {"0", "-5"})
        check_refused(run_podsim("sweep " + sweep + " --jobs " + jobs + " --no-progress", dir),
                      std::string("--jobs ") + jobs, "--jobs: ");
    // A link bandwidth of 1e-12 GB/s: every config a skipped row that says why.
    auto o =
        run_podsim("sweep " + quoted(findings / "sweep_link_bw_tiny.yaml") + " --out l --no-progress", dir);
    check_clean(o, "sweep on a 1e-12 GB/s link");
    CHECK(o.exit_code == 0);
    std::ifstream csv(dir / "l" / "results.csv");
    std::stringstream rows;
    rows << csv.rdbuf();
    CHECK(rows.str().find("1,skipped,\"cannot simulate this config") != std::string::npos);
    fs::remove_all(dir);
}

TEST_CASE("a run on a link too slow to simulate: every --dump says so") {
    const fs::path config = regressions / "run_config" / "link_bw_tiny_abort.yaml";
    for (const char* stage : {"opgraph", "mapping", "program", "timeline"}) {
        check_refused(run_podsim("run " + quoted(config) + " --dump " + stage, PODSIM_SOURCE_DIR), stage,
                      "cannot simulate this config");
    }
}

TEST_CASE("every \"written\" is checked: no file, a directory, a full disk") {
    const fs::path dir = scratch("written");
    const std::string sweep = quoted(findings / "sweep_small.yaml");
    for (const std::string& to :
         {std::string("/nonexistent/x.yaml"), dir.string(), std::string("/dev/full")}) {
        check_refused(run_podsim("sweep " + sweep + " --best-config " + to + " --no-progress", dir),
                      "--best-config " + to, "cannot write the file");
    }
    const std::string vit = quoted(fs::path(PODSIM_SOURCE_DIR) / "configs" / "vit-cifar-mesh-8x1-b128.yaml");
    check_refused(run_podsim("run " + vit + " --trace /dev/full", dir), "--trace /dev/full",
                  "/dev/full: error: cannot write the file: No space left on device");
    const std::string qnli = quoted(fs::path(PODSIM_SOURCE_DIR) / "configs" / "unit-qnli-train.yaml");
    check_refused(run_podsim("run " + qnli + " --metrics-report /dev/full", dir),
                  "--metrics-report /dev/full", "cannot write the file");
    check_refused(
        run_podsim("collective --topology tpu-v4 --slice 2x2x2 --mesh data=8 --svg /nonexistent/x.svg", dir),
        "--svg", "cannot write the file");
    check_refused(run_podsim("calibrate " + quoted(fs::path(PODSIM_SOURCE_DIR) / "configs" / "default.yaml") +
                                 " --profile " + quoted(findings / "metrics_report.txt") +
                                 " --params mxu_efficiency --out /nonexistent/dir/cal.yaml",
                             dir),
                  "calibrate --out", "cannot write the file");
    // A disk that fills up while a sweep writes its rows (a 1 KiB file size limit stands for it).
    check_refused(run_podsim("sweep " + sweep + " --out full --jobs 1 --no-progress", dir,
                             "trap '' XFSZ && ulimit -f 2 && "),
                  "a full disk", "cannot write results");
    fs::remove_all(dir);
}

TEST_CASE("input checks: standard input's size, a collective axis twice") {
    const fs::path dir = scratch("inputs");
    {
        std::ifstream base(fs::path(PODSIM_SOURCE_DIR) / "configs" / "default.yaml");
        std::ofstream big(dir / "big.yaml");
        big << base.rdbuf() << std::string(20'000'000, '#') << "\n";
    }
    check_refused(run_podsim("run - < big.yaml", dir), "20 MB on standard input",
                  "<stdin>: error: more than 16 MiB");
    check_refused(
        run_podsim("collective --topology tpu-v4 --slice 2x2x2 --mesh data=8 --axis data,data", dir),
        "--axis data,data", "axis data given twice");
    fs::remove_all(dir);
}

TEST_CASE("a run that needs more memory than the process may have says so, with exit 3") {
    if (kAddressSanitizer) return;  // ASan cannot run under ulimit -v (run_podsim)
    const fs::path dir = scratch("memory");
    // 624 microbatches of a pipelined MoE step: about 0.6 GB, where the default config needs under
    // 300 MB (it ended in "internal error: std::bad_alloc", exit 134).
    std::ofstream(dir / "big.yaml") << R"(schema: podsim.run/v1
model: mixtral-8x7b
topology: tpu-v6e
slice: 16x16
mesh: {pipeline: 4, fsdp: 16, expert: 4}
training: {global_batch: 39936, seq_len: 128, remat: full, attention: flash, num_pipeline_microbatches: 624}
)";
    const std::string limit = "ulimit -v 300000 && ";
    auto small =
        run_podsim("run " + quoted(fs::path(PODSIM_SOURCE_DIR) / "configs" / "default.yaml"), dir, limit);
    CHECK(small.exit_code == 0);
    auto big = run_podsim("run big.yaml", dir, limit);
    INFO(big.err);
    CHECK(big.exit_code == 3);
    CHECK(big.err.rfind("podsim: out of memory: ", 0) == 0);
    fs::remove_all(dir);
}
