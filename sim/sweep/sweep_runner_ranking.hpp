#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/sweep_file.hpp"
#include "sweep/expression.hpp"
#include "sweep/sweep_runner.hpp"

namespace podsim::sweep {

// The sweep's keep filters and sort key, and the summary built as rows finish.
struct Ranking {
    std::vector<Expression> keep;             // over Row::numbers
    std::size_t sort_column = columns().mfu;  // position in report::sweep_fields()
    bool descending = true;
    std::size_t top = 10;
    SweepSummary summary;

    bool better(const Row& a, const Row& b) const {
        // Unknown values rank last either way.
        double x = a.number(sort_column), y = b.number(sort_column);
        if (std::isnan(x) != std::isnan(y)) return std::isnan(y);
        if (x != y && !std::isnan(x)) return descending ? x > y : x < y;
        return a.index < b.index;
    }

    void apply_keep(Row& r) const {
        r.kept = r.ok;
        for (const auto& e : keep) {
            if (!r.kept) break;
            r.kept = e.evaluate(r.numbers);
        }
    }

    // Adds a finished row; memory stays bounded: the top rows, the Pareto front, counts.
    void add(const Row& r) {
        SweepSummary& s = summary;
        if (!r.ok) {
            ++s.skipped[r.reason];
            return;
        }
        ++s.evaluated;
        const Columns& c = columns();
        const bool fits = r.flag(c.fits);
        if (!fits) ++s.not_fitting;
        if (r.kept) {
            ++s.kept;
            auto pos = std::lower_bound(s.ranked.begin(), s.ranked.end(), r,
                                        [&](const Row& a, const Row& b) { return better(a, b); });
            s.ranked.insert(pos, r);
            if (s.ranked.size() > top) s.ranked.pop_back();
        }
        if (fits) {
            auto time = [&](const Row& x) { return x.number(c.step_time_s); };
            auto bytes = [&](const Row& x) { return x.number(c.peak_bytes); };
            auto dominates = [&](const Row& a, const Row& b) {
                return time(a) <= time(b) && bytes(a) <= bytes(b) &&
                       (time(a) < time(b) || bytes(a) < bytes(b));
            };
            for (const auto& p : s.pareto) {
                if (dominates(p, r) || (time(p) == time(r) && bytes(p) == bytes(r))) return;
            }
            std::erase_if(s.pareto, [&](const Row& p) { return dominates(r, p); });
            s.pareto.push_back(r);
            std::sort(s.pareto.begin(), s.pareto.end(),
                      [&](const Row& a, const Row& b) { return time(a) < time(b); });
        }
    }
};

// Position in report::sweep_fields() of a numeric sweep column named `name` (its column or
// report path): what keep expressions and the sort key may name.
std::optional<std::size_t> numeric_column(std::string_view name);

// A keep expression over the numeric sweep columns, evaluated on Row::numbers; nullopt (and
// `error`, with a "did you mean") when it does not parse or names an unknown field.
std::optional<Expression> parse_row_expression(const std::string& text, std::string& error);

// Checks the plan's keep expressions and sort key (core::UserError at their FILE:LINE:COL).
Ranking make_ranking(const config::SweepPlan& plan, std::size_t top);

}  // namespace podsim::sweep
