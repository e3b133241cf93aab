// The XProf pod_viewer JSON reader on its own (it reads from a path).
#include "fuzz_support.hpp"

#include "profile/pod_viewer.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace podsim;
    const std::string path = podsim::fuzz::write_input("pod_viewer.json", data, size);
    fuzz::expect_result_or_user_error([&] { (void)profile::read_pod_viewer(path); });
    return 0;
}
