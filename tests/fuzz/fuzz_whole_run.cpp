// Run configs with a whole_run: block (a run of many steps), as `podsim run` runs them: load, then
// simulate the whole run and write its summary, JSON document, metrics report and trace. A run
// must cost memory independent of its length and end in time however many steps it asks for.
#include "fuzz_support.hpp"

#include "training_run/whole_run.hpp"
#include "training_run/whole_run_format.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    podsim::fuzz::use_source_tree();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    using namespace podsim;
    const std::string text(reinterpret_cast<const char*>(data), size);
    fuzz::expect_result_or_user_error([&] {
        run::RunSpec spec = fuzz::load_run(text);
        if (!spec.whole_run) return;
        const training_run::WholeRun w = training_run::simulate_whole_run(spec, *spec.whole_run);
        (void)training_run::format_whole_run(w);
        (void)training_run::whole_run_json(w);
        (void)training_run::metrics_report(w);
        (void)training_run::whole_run_trace(w);
        for (long step : {0L, w.total_steps() / 2, w.total_steps() - 1}) {
            (void)w.counts_at(step);
            (void)w.debug_lines_at(step);
        }
    });
    return 0;
}
