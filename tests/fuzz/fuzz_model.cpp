// Model files (podsim.model/v1) through the public loader.
#include "fuzz_support.hpp"

#include "config/load.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    podsim::fuzz::use_source_tree();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace podsim;
    const std::string path = fuzz::write_input("model.yaml", data, size);
    fuzz::expect_result_or_user_error([&] { (void)config::load_model_file(path); });
    return 0;
}
