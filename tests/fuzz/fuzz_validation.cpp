// Validation cases: a published measurement (podsim.validation/v1) or a measured collective
// (podsim.collective-validation/v1), loaded as a one-file suite and evaluated as `podsim validate
// --suite DIR --format json` would.
#include "fuzz_support.hpp"

#include "config/load.hpp"
#include "profile/suite.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    podsim::fuzz::use_source_tree();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace podsim;
    const std::string path = fuzz::write_input("suite/case.yaml", data, size);
    const std::string dir = std::filesystem::path(path).parent_path().string();
    fuzz::expect_result_or_user_error([&] {
        auto results = profile::evaluate_suite(config::load_validation_suite(dir));
        (void)profile::format_suite(results);
        (void)profile::format_suite_json(results);
    });
    fuzz::expect_result_or_user_error([&] {
        auto results = profile::evaluate_collective_suite(config::load_collective_suite(dir));
        (void)profile::format_suite_markdown(results);
        (void)profile::format_suite_json(results);
    });
    return 0;
}
