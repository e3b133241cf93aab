// Any measured profile, through format detection (profile::read_profile), then compared with the
// prediction for configs/default.yaml as `podsim validate CONFIG --profile FILE` does.
#include "fuzz_support.hpp"

#include <memory>

#include "config/load.hpp"
#include "profile/compare.hpp"
#include "profile/measured_profile.hpp"
#include "run/simulate.hpp"

namespace {
std::unique_ptr<podsim::run::Simulation> prediction;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    podsim::fuzz::use_source_tree();
    auto spec = podsim::config::load_run_file(PODSIM_SOURCE_DIR "/configs/default.yaml");
    prediction = std::make_unique<podsim::run::Simulation>(podsim::run::simulate(spec));
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace podsim;
    const std::string path = fuzz::write_input("profile", data, size);
    fuzz::expect_result_or_user_error([&] {
        profile::MeasuredProfile measured = profile::read_profile(path);
        profile::Comparison c = profile::compare(prediction->report, measured, 128);
        (void)profile::format_comparison(c);
        (void)profile::comparison_json(c);
    });
    return 0;
}
