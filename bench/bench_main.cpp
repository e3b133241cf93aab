// `make bench`: how fast podsim itself is. Wall-clock figures, medians over repeated runs; README
// records the latest with the machine they were measured on.
#include <fcntl.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "config/load.hpp"
#include "config/sweep_file.hpp"
#include "core/process_heap.hpp"
#include "run/collective_run.hpp"
#include "run/module_run.hpp"
#include "run/simulate.hpp"
#include "sweep/sweep_runner.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

template <typename F>
double time_median(int repeats, F&& body) {
    std::vector<double> samples;
    for (int i = 0; i < repeats; ++i) {
        auto start = Clock::now();
        body();
        samples.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
    return median(samples);
}

// `podsim_bench TEXT` runs only the cases whose label contains TEXT (and no RSS line).
bool selected(const std::string& label, const std::string& filter) {
    return label.find(filter) != std::string::npos;
}

// Whether a measured figure meets its target, as the bench lines print it.
std::string verdict(bool met) {
    return met ? "yes" : "NO";
}

// The speed targets (docs/performance.md): any single config simulated in 5 ms; the 175B sweep at
// 10,000 configs/s and the GPT-2 sweep at 20,000 with 2 jobs.
constexpr double kConfigBoundSeconds = 5e-3;

void bench_config(const std::string& label, const std::string& relative, int repeats,
                  const std::string& filter) {
    if (!selected(label, filter)) return;
    const std::string path = std::string(PODSIM_SOURCE_DIR) + "/" + relative;
    const std::string command = std::string(PODSIM_BINARY) + " run " + path + " --format json > /dev/null";
    double process = time_median(repeats, [&] {
        if (std::system(command.c_str()) != 0) std::fprintf(stderr, "bench: %s failed\n", command.c_str());
    });
    auto spec = podsim::config::load_run_file(path);
    double load = time_median(repeats, [&] { podsim::config::load_run_file(path); });
    podsim::run::Simulation sim;
    // As `podsim run` simulates it: folded, with a fresh cache.
    double simulate = time_median(repeats, [&] {
        podsim::run::SimulationCache cache;
        sim = podsim::run::simulate(spec, cache, podsim::run::SimulateOptions{.fold = true});
    });
    fmt::print(
        "{:<44} {:>9.1f} ms {:>9.1f} ms {:>9.1f} ms {:>8} {:>9}  step {:.3f} s, MFU {:.1f}%, within {:.0f} "
        "ms: {}\n",
        label, process * 1e3, load * 1e3, simulate * 1e3, sim.report.ops, sim.report.events,
        sim.report.step_time_s, 100.0 * sim.report.mfu, kConfigBoundSeconds * 1e3,
        verdict(simulate <= kConfigBoundSeconds));
}

void bench_pod_all_gather(const std::string& filter) {
    if (!selected("all-gather, full 16x16x16 v4 pod (4096 chips)", filter)) return;
    podsim::run::CollectiveRequest r;
    r.topology =
        podsim::config::load_topology_file(std::string(PODSIM_SOURCE_DIR) + "/topologies/tpu-v4.yaml");
    r.slice = *podsim::hardware::parse_slice_shape("16x16x16");
    r.mesh.ici = {{"pod", 4096}};
    r.axes = {"pod"};
    r.bytes = 1024.0 * 1024 * 1024;
    podsim::run::CollectiveResult result;
    double seconds = time_median(5, [&] { result = podsim::run::run_collective(r); });
    fmt::print("{:<44} {:>12} {:>12} {:>9.1f} ms {:>8} {:>9}  all-gather of 1 GiB: {:.3f} ms\n",
               "all-gather, full 16x16x16 v4 pod (4096 chips)", "-", "-", seconds * 1e3,
               result.plan.phases.size(), "", result.time_s * 1e3);
}

// The median of three runs with 1 and with 2 jobs; `target`: configs/s with 2 jobs.
void bench_sweep(const std::string& label, const std::string& relative, double target,
                 const std::string& filter) {
    if (!selected("sweep: " + label, filter)) return;
    const std::string file = std::string(PODSIM_SOURCE_DIR) + "/" + relative;
    auto plan = podsim::config::SweepPlan::load(file);
    for (int jobs : {1, 2}) {
        podsim::sweep::SweepOptions options;
        options.jobs = jobs;
        options.progress = false;
        std::vector<double> seconds, rates;
        long evaluated = 0;
        for (int run = 0; run < 3; ++run) {
            auto summary = podsim::sweep::run_sweep(plan, options);
            seconds.push_back(summary.seconds);
            rates.push_back(summary.configs_per_second);
            evaluated = static_cast<long>(summary.evaluated);
        }
        const double rate = median(rates);
        fmt::print(
            "{:<44} {:>12} {:>12} {:>9.1f} s  {:>8} {:>9}  {:.0f} configs/s, {} jobs ({} simulated){}\n",
            fmt::format("sweep: {} ({} configs)", label, plan.size()), "-", "-", median(seconds), plan.size(),
            "", rate, jobs, evaluated,
            jobs == 2 ? fmt::format(", target {:.0f}: {}", target, verdict(rate >= target)) : "");
    }
}

// A compiled XLA module read (gunzipped and parsed), lowered and simulated: what `podsim run
// MODULE` does, in this process. Its speed targets: an unrolled step within 1 s, a scanned
// one within 100 ms.
void bench_module(const std::string& label, const std::string& relative, int repeats, double bound_s,
                  const std::string& filter) {
    if (!selected(label, filter)) return;
    podsim::run::ModuleRunRequest request;
    request.path = std::string(PODSIM_SOURCE_DIR) + "/" + relative;
    request.topology = "nvidia-h200";
    podsim::run::ModuleRun run;
    const double seconds = time_median(repeats, [&] { run = podsim::run::run_module(request); });
    fmt::print("{:<44} {:>12} {:>12} {:>9.1f} ms {:>8} {:>9}  step {:.1f} ms, within {:.0f} ms: {}\n", label,
               "-", "-", seconds * 1e3, run.simulation.report.ops, run.simulation.report.events,
               run.simulation.report.step_time_s * 1e3, bound_s * 1e3, verdict(seconds <= bound_s));
}

long peak_rss_kib() {
    rusage usage{};
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_maxrss;
}

// Peak resident memory (KiB) of one `podsim sweep` process over the first `limit` configs.
long sweep_process_rss_kib(const std::string& file, std::size_t limit) {
    const std::string out = fmt::format("/tmp/podsim-bench-rss-{}", ::getpid());
    std::vector<std::string> args = {PODSIM_BINARY, "sweep", file,      "--no-progress",
                                     "--jobs",      "2",     "--limit", std::to_string(limit),
                                     "--out",       out};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    pid_t pid = 0;
    if (posix_spawn(&pid, PODSIM_BINARY, &actions, nullptr, argv.data(), environ) != 0) return -1;
    posix_spawn_file_actions_destroy(&actions);
    int status = 0;
    rusage usage{};
    wait4(pid, &status, 0, &usage);
    std::filesystem::remove_all(out);
    return usage.ru_maxrss;
}

std::string rss_line() {
    const std::string file = std::string(PODSIM_SOURCE_DIR) + "/bench/sweeps/rss-100k.yaml";
    const long small = sweep_process_rss_kib(file, 1000);
    const long large = sweep_process_rss_kib(file, 100000);
    return fmt::format(
        "sweep process peak RSS: {:.1f} MiB after 1,000 configs, {:.1f} MiB after 100,000 ({:+.1f}%)\n",
        static_cast<double>(small) / 1024.0, static_cast<double>(large) / 1024.0,
        100.0 * (static_cast<double>(large) / static_cast<double>(small) - 1.0));
}

}  // namespace

int main(int argc, char** argv) {
    const std::string filter = argc > 1 ? argv[1] : "";
    fmt::print(
        "podsim benchmarks (median wall time; process = `podsim run --format json`, whole process)\n\n");
    // First, while this process is small: a child spawned from it starts with this process's peak
    // resident memory as its own (Linux keeps the high-water mark across exec).
    const std::string rss = filter.empty() ? rss_line() : std::string();
    // Simulate in this process as `podsim run` does (core/process_heap.hpp); the sweeps below run in
    // worker threads, as in `podsim sweep`, which the huge pages do not reach.
    podsim::core::configure_process_heap(/*huge_pages=*/true);
    fmt::print("{:<44} {:>12} {:>12} {:>12} {:>8} {:>9}\n", "case", "process", "load config", "simulate",
               "ops", "events");
    bench_config("default (GPT-2 2B FSDP, v4-8, 4 chips)", "configs/default.yaml", 21, filter);
    bench_config("GPT-2 128B FSDP, 4x8x8 (256 chips)", "configs/gpt2-128b-fsdp-v4-512.yaml", 11, filter);
    bench_config("MaxText 22B FSDP, 4x4x4 (64 chips)", "configs/maxtext-22b-fsdp-v4-128.yaml", 11, filter);
    bench_config("PaLM 540B, 2 x 3072 chips (6144)", "configs/palm-540b-2x3072.yaml", 5, filter);
    bench_config("GPT-3 175B, 16x16x16, data 8 x fsdp 64 x tensor 8, 8 mb",
                 "bench/configs/gpt3-175b-16x16x16-mb8.yaml", 5, filter);
    bench_config("Mixtral 8x7B dropless, v6e 16x16, fsdp 64 x expert 4",
                 "configs/mixtral-8x7b-ep4-v6e-256.yaml", 11, filter);
    bench_config("Llama 3 8B, 4x4x4, 4 pipeline stages x fsdp 16", "configs/llama3-8b-pipeline-v4-128.yaml",
                 11, filter);
    bench_pod_all_gather(filter);
    bench_module("XLA module, Llama 1B unrolled (read+simulate)",
                 "tests/data/xla-truth/hlo/1b-b8-minimal-dot-unrolled.hlo.txt.gz", 5, 1.0, filter);
    bench_module("XLA module, Llama 1B scanned (read+simulate)",
                 "tests/data/xla-truth/hlo/1b-b8-minimal-dot.hlo.txt.gz", 11, 0.1, filter);
    bench_sweep("GPT-2 small to 2B, v4-8 to 4x8x8", "tests/data/sweeps/large.yaml", 20000, filter);
    bench_sweep("GPT-3 175B on v4, 128 to 4096 chips", "configs/sweeps/gpt3-175b-v4.yaml", 10000, filter);
    fmt::print("\npeak resident memory of this process: {:.0f} MiB\n",
               static_cast<double>(peak_rss_kib()) / 1024.0);
    fmt::print("{}", rss);
    return 0;
}
