// Runs a fuzz target once over given files and directories (recursively), without libFuzzer: how
// `make test` replays the seed corpus and the regression inputs with any compiler. An input that
// takes longer than PODSIM_FUZZ_INPUT_SECONDS (default 10) fails the run, as libFuzzer's -timeout
// would; the address space is limited to PODSIM_FUZZ_INPUT_MB (default 2048), as -rss_limit_mb
// would (an input that needs more ends in std::bad_alloc, a failure).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <sys/resource.h>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);
extern "C" __attribute__((weak)) int LLVMFuzzerInitialize(int* argc, char*** argv);

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    if (LLVMFuzzerInitialize) LLVMFuzzerInitialize(&argc, &argv);
    const char* limit_env = std::getenv("PODSIM_FUZZ_INPUT_SECONDS");
    const double limit_s = limit_env ? std::atof(limit_env) : 10.0;
    const char* memory_env = std::getenv("PODSIM_FUZZ_INPUT_MB");
    const rlim_t memory_bytes = static_cast<rlim_t>(memory_env ? std::atol(memory_env) : 2048) << 20;
    const rlimit limit{memory_bytes, memory_bytes};
    setrlimit(RLIMIT_AS, &limit);
    std::vector<fs::path> inputs;
    for (int i = 1; i < argc; ++i) {
        const fs::path given(argv[i]);
        if (fs::is_directory(given)) {
            for (const auto& entry : fs::recursive_directory_iterator(given))
                if (entry.is_regular_file()) inputs.push_back(entry.path());
        } else if (fs::is_regular_file(given)) {
            inputs.push_back(given);
        } else {
            std::fprintf(stderr, "%s: no such file or directory\n", argv[i]);
            return 1;
        }
    }
    std::sort(inputs.begin(), inputs.end());
    int slow = 0;
    for (const auto& path : inputs) {
        std::ifstream in(path, std::ios::binary);
        const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        const auto start = std::chrono::steady_clock::now();
        LLVMFuzzerTestOneInput(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size());
        const double seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        if (seconds > limit_s) {
            std::fprintf(stderr, "%s: took %.1f s (limit %.0f s)\n", path.c_str(), seconds, limit_s);
            ++slow;
        }
    }
    std::printf("%zu inputs run, %d over the time limit\n", inputs.size(), slow);
    return slow == 0 ? 0 : 1;
}
