// Simulates a run config through podsim's C++ API: embed CONFIG [key.path=value ...]
// Prints the step time and MFU, then the JSON report of the same config at twice the global batch,
// changed in the RunSpec itself rather than in the YAML.
#include <cstdio>
#include <string>
#include <vector>

#include <podsim/podsim.hpp>

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: embed CONFIG [key.path=value ...]\n");
        return 2;
    }
    try {
        std::vector<podsim::Override> overrides;
        for (int i = 2; i < argc; ++i) overrides.push_back(podsim::parse_override(argv[i]));
        podsim::RunSpec spec = podsim::load_run(argv[1], overrides);
        podsim::RunReport report = podsim::simulate(spec).report;
        std::printf("%s: global batch %lld, step %.6f s, MFU %.4f, peak HBM %.0f bytes (%s)\n",
                    report.name.c_str(), static_cast<long long>(spec.training.global_batch),
                    report.step_time_s, report.mfu, report.memory.peak_bytes,
                    report.memory.fits ? "fits" : "does not fit");

        spec.training.global_batch *= 2;
        std::fputs(podsim::report_json(podsim::simulate(spec).report).c_str(), stdout);
    } catch (const podsim::ConfigError& e) {
        std::fputs(e.diagnostics().to_string().c_str(), stderr);
        return 2;
    } catch (const podsim::InternalError& e) {
        std::fprintf(stderr, "%s\n", e.what());
        return 3;
    }
    return 0;
}
