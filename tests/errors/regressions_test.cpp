// The fuzz findings (tests/fuzz/regressions) through the command line, as a user runs
// them: each must end with exit 0 and a report, or exit 2 and a `FILE:...: error:` message, within
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
// (CPU seconds) and, against a hang that uses no CPU, `timeout 120`.
Outcome run_podsim(const std::string& args, const fs::path& dir) {
    const fs::path err =
        fs::temp_directory_path() / ("podsim-regression-" + std::to_string(::getpid()) + ".err");
    const std::string limit = kAddressSanitizer ? "" : "ulimit -v 2097152 && ";
    const std::string command = "cd '" + dir.string() + "' && " + limit + "ulimit -t 10 && timeout 120 " +
                                std::string(PODSIM_BINARY) + " " + args + " > /dev/null 2> '" + err.string() +
                                "'";
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
