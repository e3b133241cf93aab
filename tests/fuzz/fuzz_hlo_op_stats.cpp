// The HLO op stats CSV reader on its own, without format detection in front of it.
#include "fuzz_support.hpp"

#include "profile/measured_profile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace podsim;
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    fuzz::expect_result_or_user_error([&] { (void)profile::read_hlo_op_stats_csv("fuzz-input", bytes); });
    return 0;
}
