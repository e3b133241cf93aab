// Sweep files (podsim.sweep/v1): load the plan, build a few instances and run the first configs
// with their keep filters and sort key, as `podsim sweep FILE --limit 2 --jobs 1` would.
#include "fuzz_support.hpp"

#include <algorithm>

#include "config/sweep_file.hpp"
#include "sweep/sweep_runner.hpp"

namespace fs = std::filesystem;

// The sweep is written to SCRATCH/configs/sweeps/sweep.yaml beside copies of the shipped configs,
// so that `base: ../gpt2-2b-fsdp-v4-8.yaml` (configs/sweeps/) and `base: default.yaml` (the fuzz
// findings) both resolve.
extern "C" int LLVMFuzzerInitialize(int*, char***) {
    podsim::fuzz::use_source_tree();
    const fs::path configs = fs::path(PODSIM_SOURCE_DIR) / "configs";
    const fs::path sweeps = podsim::fuzz::scratch_dir() / "configs" / "sweeps";
    fs::create_directories(sweeps);
    for (const auto& entry : fs::directory_iterator(configs)) {
        if (entry.path().extension() == ".yaml")
            fs::copy_file(entry.path(), sweeps.parent_path() / entry.path().filename(),
                          fs::copy_options::overwrite_existing);
    }
    fs::copy_file(configs / "default.yaml", sweeps / "default.yaml", fs::copy_options::overwrite_existing);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace podsim;
    const std::string path = fuzz::write_input("configs/sweeps/sweep.yaml", data, size);
    fuzz::expect_result_or_user_error([&] {
        config::SweepPlan plan = config::SweepPlan::load(path);
        const std::size_t shown = std::min<std::size_t>(plan.size(), 3);
        for (std::size_t i = 0; i < shown; ++i) (void)plan.make(i, true);
        sweep::SweepOptions options;
        options.jobs = 1;
        options.progress = false;
        options.limit = 2;
        options.top = 3;
        (void)sweep::format_summary(sweep::run_sweep(plan, options));
    });
    return 0;
}
