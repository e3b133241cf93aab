// The compiled-module readers (sim/hlo): HLO text and HloProto, gzipped or not, told apart by
// content as `podsim run MODULE` does. Text is read under a .hlo name, anything else as a proto.
#include "fuzz_support.hpp"

#include "hlo/read_module.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace podsim;
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    fuzz::expect_result_or_user_error([&] { (void)hlo::read_module("fuzz-input.hlo", bytes); });
    return 0;
}
