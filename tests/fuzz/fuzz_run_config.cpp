// Run configs (podsim.run/v1) from text, then everything `podsim run` does with a config that loads:
// simulate it and format the table, the JSON report and the Chrome trace.
#include "fuzz_support.hpp"

#include "report/format.hpp"
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
        (void)report::format_table(sim.report);
        (void)report::format_json(sim.report);
        (void)report::chrome_trace(spec.name, sim.program, sim.timeline, sim.memory);
    });
    return 0;
}
