// Sweep files (podsim.sweep/v1): load the plan, build a few instances and run the first configs
// with their keep filters and sort key, as `podsim sweep FILE --limit 2 --jobs 1` would.
#include "fuzz_support.hpp"

#include <algorithm>

#include "config/sweep_file.hpp"
#include "sweep/sweep_runner.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    podsim::fuzz::use_source_tree();
    // `base: default.yaml`, as in the shipped sweeps and the fuzz findings.
    std::filesystem::copy_file(std::filesystem::path(PODSIM_SOURCE_DIR) / "configs" / "default.yaml",
                               podsim::fuzz::scratch_dir() / "default.yaml",
                               std::filesystem::copy_options::overwrite_existing);
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace podsim;
    const std::string path = fuzz::write_input("sweep.yaml", data, size);
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
