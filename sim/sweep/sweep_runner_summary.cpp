#include "sweep/sweep_runner.hpp"

#include <fmt/format.h>

#include "core/quantity.hpp"

namespace podsim::sweep {

std::string format_summary(const SweepSummary& s) {
    std::string out;
    auto params_text = [&](const Row& r) {
        std::string t;
        for (std::size_t i = 0; i < r.values.size() && i < s.parameter_names.size(); ++i) {
            t += (i ? "  " : "") + s.parameter_names[i] + "=" + r.values[i];
        }
        return t;
    };
    out += fmt::format("sweep: {} configs, {} simulated, {} kept, {} do not fit, {} skipped", s.total,
                       s.evaluated, s.kept, s.not_fitting, [&] {
                           std::size_t n = 0;
                           for (const auto& [reason, count] : s.skipped) n += count;
                           return n;
                       }());
    if (s.resumed > 0) out += fmt::format(" ({} from an earlier run)", s.resumed);
    out += fmt::format("; {:.2f} s, {:.0f} configs/s\n\n", s.seconds, s.configs_per_second);
    out += fmt::format("best by {} (kept configs)\n", s.sort_key);
    out += fmt::format("  {:>4} {:>6} {:>10} {:>7} {:>7} {:>11} {:>5}  {}\n", "rank", "index", "step", "MFU",
                       "HFU", "peak HBM", "fits", "parameters");
    const Columns& c = columns();
    for (std::size_t i = 0; i < s.ranked.size(); ++i) {
        const Row& r = s.ranked[i];
        out += fmt::format("  {:>4} {:>6} {:>10} {:>6.1f}% {:>6.1f}% {:>11} {:>5}  {}\n", i + 1, r.index,
                           core::format_seconds(r.number(c.step_time_s)), 100 * r.number(c.mfu),
                           100 * r.number(c.hfu), core::format_bytes(r.number(c.peak_bytes)),
                           r.flag(c.fits) ? "yes" : "no", params_text(r));
    }
    out += "\nPareto front: step time vs peak HBM (configs that fit)\n";
    for (const Row& r : s.pareto) {
        out += fmt::format("  {:>6} {:>10} {:>11}  MFU {:>5.1f}%  {}\n", r.index,
                           core::format_seconds(r.number(c.step_time_s)),
                           core::format_bytes(r.number(c.peak_bytes)), 100 * r.number(c.mfu), params_text(r));
    }
    if (s.not_fitting > 0 || !s.skipped.empty()) out += "\nnot run or not fitting\n";
    if (s.not_fitting > 0)
        out += fmt::format("  {:>6}  simulated, but peak HBM exceeds capacity\n", s.not_fitting);
    for (const auto& [reason, count] : s.skipped) out += fmt::format("  {:>6}  skipped: {}\n", count, reason);
    return out;
}

}  // namespace podsim::sweep
