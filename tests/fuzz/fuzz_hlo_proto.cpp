// The compiled-HloProto reader (XLA's buffer assignment) on its own, without format detection in front
// of it (read_profile picks it by the file name *.hlo.pb).
#include "fuzz_support.hpp"

#include "profile/measured_profile.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace podsim;
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    fuzz::expect_result_or_user_error([&] { (void)profile::read_hlo_proto("fuzz-input.hlo.pb", bytes); });
    return 0;
}
