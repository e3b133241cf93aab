#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "config/sweep_file.hpp"
#include "sweep/expression.hpp"
#include "sweep/sweep_runner.hpp"

namespace podsim::sweep {

// The sweep's keep filters and sort key, and the summary built as rows finish.
struct Ranking {
    std::vector<Expression> keep;
    std::string sort_field = "mfu";
    bool descending = true;
    std::size_t top = 10;
    SweepSummary summary;

    bool better(const Row& a, const Row& b) const {
        double x = row_field(a, sort_field).value_or(0), y = row_field(b, sort_field).value_or(0);
        if (x != y) return descending ? x > y : x < y;
        return a.index < b.index;
    }

    void apply_keep(Row& r) const {
        r.kept = r.ok;
        for (const auto& e : keep) {
            if (!r.kept) break;
            r.kept = e.evaluate([&](const std::string& name) { return row_field(r, name); });
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
        if (!r.fits) ++s.not_fitting;
        if (r.kept) {
            ++s.kept;
            auto pos = std::lower_bound(s.ranked.begin(), s.ranked.end(), r,
                                        [&](const Row& a, const Row& b) { return better(a, b); });
            s.ranked.insert(pos, r);
            if (s.ranked.size() > top) s.ranked.pop_back();
        }
        if (r.fits) {
            auto dominates = [](const Row& a, const Row& b) {
                return a.step_time_s <= b.step_time_s && a.peak_bytes <= b.peak_bytes &&
                       (a.step_time_s < b.step_time_s || a.peak_bytes < b.peak_bytes);
            };
            for (const auto& p : s.pareto) {
                if (dominates(p, r) || (p.step_time_s == r.step_time_s && p.peak_bytes == r.peak_bytes))
                    return;
            }
            std::erase_if(s.pareto, [&](const Row& p) { return dominates(r, p); });
            s.pareto.push_back(r);
            std::sort(s.pareto.begin(), s.pareto.end(),
                      [](const Row& a, const Row& b) { return a.step_time_s < b.step_time_s; });
        }
    }
};

// Checks the plan's keep expressions and sort key (core::UserError at their FILE:LINE:COL).
Ranking make_ranking(const config::SweepPlan& plan, std::size_t top);

}  // namespace podsim::sweep
