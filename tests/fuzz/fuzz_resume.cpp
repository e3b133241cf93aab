// The --out directory a sweep resumes from (or `sweep merge` reads): shard.txt, results.csv and
// results.jsonl as an earlier run, another sweep, another shard or a crash left them. The input is
// the three files' contents joined by lines of "%%" (a part left out: no such file). Resuming must
// refuse another sweep's directory with a clear error, or complete this sweep's rows; merging must
// merge or refuse.
#include "fuzz_support.hpp"

#include <vector>

#include "config/sweep_file.hpp"
#include "sweep/sweep_runner.hpp"

namespace fs = std::filesystem;

namespace {

// Six configs of a small model on one chip: milliseconds each.
constexpr const char* kSweep = R"(schema: podsim.sweep/v1
base:
  schema: podsim.run/v1
  name: small
  model: unit-text-standin
  topology: tpu-v4
  slice: 1x1x1
  mesh: {data: 1}
  training: {global_batch: 8, seq_len: 128, optimizer: adamw}
  runtime: {framework: jax}
axes:
  training.global_batch: [8, 16, 32]
  training.remat: [none, full]
keep: fits
)";

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    podsim::fuzz::use_source_tree();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace podsim;
    const std::string text(reinterpret_cast<const char*>(data), size);
    std::vector<std::string> parts;
    std::size_t start = 0;
    while (parts.size() < 2) {
        const std::size_t at = text.find("\n%%\n", start);
        if (at == std::string::npos) break;
        parts.push_back(text.substr(start, at + 1 - start));
        start = at + 4;
    }
    parts.push_back(text.substr(start));
    const fs::path dir = fuzz::scratch_dir() / "out";
    fs::remove_all(dir);
    fs::create_directories(dir);
    const char* names[] = {"shard.txt", "results.csv", "results.jsonl"};
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const std::string& part = parts[i];
        fuzz::write_input("out/" + std::string(names[i]), reinterpret_cast<const std::uint8_t*>(part.data()),
                          part.size());
    }
    const config::SweepPlan plan = config::SweepPlan::load_text(kSweep, "sweep.yaml", fuzz::scratch_dir());
    fuzz::expect_result_or_user_error([&] {
        (void)sweep::merge_shards(plan, {dir.string()}, (fuzz::scratch_dir() / "merged").string(), true);
    });
    fuzz::expect_result_or_user_error([&] {
        sweep::SweepOptions options;
        options.jobs = 1;
        options.progress = false;
        options.limit = 2;
        options.out_dir = dir.string();
        options.resume = true;
        (void)sweep::format_summary(sweep::run_sweep(plan, options));
    });
    return 0;
}
