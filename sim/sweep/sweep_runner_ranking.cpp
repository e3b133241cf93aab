#include "sweep/sweep_runner_ranking.hpp"

#include <fmt/format.h>

#include "core/diagnostics.hpp"

namespace podsim::sweep {

Ranking make_ranking(const config::SweepPlan& plan, std::size_t top) {
    Ranking ranking;
    ranking.top = top;
    core::Diagnostics d;
    for (const auto& k : plan.keep()) {
        std::string error;
        auto e = Expression::parse(k.text, row_fields(), error);
        if (!e) {
            d.error(k.location, "keep", fmt::format("'{}': {}", k.text, error));
        } else {
            ranking.keep.push_back(*e);
        }
    }
    std::string key = plan.sort().text;
    ranking.descending = !key.empty() && key[0] == '-';
    if (!key.empty() && (key[0] == '-' || key[0] == '+')) key = key.substr(1);
    if (!row_field(Row{}, key)) {
        d.error(
            plan.sort().location, "sort",
            fmt::format("'{}' is not a report field (one of step_time_s, mfu, hfu, tokens_per_s, peak_bytes, "
                        "chips, ...); prefix '-' for descending",
                        plan.sort().text));
    }
    ranking.sort_field = key;
    ranking.summary.sort_key = plan.sort().text;
    ranking.summary.parameter_names = plan.parameter_names();
    core::throw_if_errors(d);
    return ranking;
}

}  // namespace podsim::sweep
