#include "sweep/sweep_runner_ranking.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/diagnostics.hpp"
#include "core/suggest.hpp"

namespace podsim::sweep {

Ranking make_ranking(const config::SweepPlan& plan, std::size_t top) {
    Ranking ranking;
    ranking.top = top;
    core::Diagnostics d;
    for (const auto& k : plan.keep()) {
        std::string error;
        auto e = Expression::parse(k.text, row_fields(), error);
        if (!e) {
            // A long expression is shown by its start: the position is in the location.
            const std::string shown = k.text.size() > 60 ? k.text.substr(0, 57) + "..." : k.text;
            d.error(k.location, "keep", fmt::format("'{}': {}", shown, error));
        } else {
            ranking.keep.push_back(*e);
        }
    }
    std::string key = plan.sort().text;
    ranking.descending = !key.empty() && key[0] == '-';
    if (!key.empty() && (key[0] == '-' || key[0] == '+')) key = key.substr(1);
    if (!row_field(Row{}, key)) {
        std::string hint;
        if (auto match = core::closest_match(key, row_fields()))
            hint = fmt::format(" (did you mean '{}{}'?)", ranking.descending ? "-" : "", *match);
        d.error(plan.sort().location, "sort",
                fmt::format("'{}' is not a report field{}: one of {}; prefix '-' for descending",
                            plan.sort().text, hint, fmt::join(row_fields(), ", ")));
    }
    ranking.sort_field = key;
    ranking.summary.sort_key = plan.sort().text;
    ranking.summary.parameter_names = plan.parameter_names();
    core::throw_if_errors(d);
    return ranking;
}

}  // namespace podsim::sweep
