// Run configs through `podsim run --dump STAGE`: the unfolded simulation, then every stage's dump
// (op graph, mesh mapping, partitioned program, timeline).
#include "fuzz_support.hpp"

#include "run/dumps.hpp"
#include "run/simulate.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    podsim::fuzz::use_source_tree();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace podsim;
    const std::string text(reinterpret_cast<const char*>(data), size);
    fuzz::expect_result_or_user_error([&] {
        run::RunSpec spec = fuzz::load_run(text);
        run::Simulation sim = run::simulate(spec);
        for (const char* stage : {"opgraph", "mapping", "program", "timeline"})
            (void)run::dump_stage(spec, sim, stage);
    });
    return 0;
}
