#include "sweep/sweep_runner_ranking.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/diagnostics.hpp"
#include "core/suggest.hpp"
#include "report/report_fields.hpp"

namespace podsim::sweep {

std::optional<std::size_t> numeric_column(std::string_view name) {
    auto column = report::sweep_column(name);
    if (column && report::sweep_fields()[*column]->numeric()) return column;
    return std::nullopt;
}

std::optional<Expression> parse_row_expression(const std::string& text, std::string& error) {
    return Expression::parse(text, numeric_column, report::expression_names(), error);
}

Ranking make_ranking(const config::SweepPlan& plan, std::size_t top) {
    Ranking ranking;
    ranking.top = top;
    core::Diagnostics d;
    const auto& names = report::expression_names();
    for (const auto& k : plan.keep()) {
        std::string error;
        auto e = parse_row_expression(k.text, error);
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
    if (auto column = numeric_column(key)) {
        ranking.sort_column = *column;
    } else {
        std::string hint;
        if (auto match = core::closest_match(key, names))
            hint = fmt::format(" (did you mean '{}{}'?)", ranking.descending ? "-" : "", *match);
        // The columns only: their report paths are aliases (`podsim explain sweep` lists both).
        std::vector<std::string_view> shown;
        for (const auto* f : report::sweep_fields())
            if (f->numeric()) shown.push_back(f->name());
        d.error(plan.sort().location, "sort",
                fmt::format(
                    "'{}' is not a report field of the sweep rows{}: one of {}; prefix '-' for descending",
                    plan.sort().text, hint, fmt::join(shown, ", ")));
    }
    ranking.summary.sort_key = plan.sort().text;
    ranking.summary.parameter_names = plan.parameter_names();
    core::throw_if_errors(d);
    return ranking;
}

}  // namespace podsim::sweep
