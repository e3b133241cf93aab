#pragma once

#include <string>
#include <vector>

#include "profile/measured_profile.hpp"
#include "training_run/whole_run.hpp"

namespace podsim::profile {

// One quantity of a whole run, predicted and measured: a count per step, a time per sample, the
// gap between executions, the step time.
struct WholeRunRow {
    std::string quantity;
    std::string unit;  // "per step", "s", "s per sample"
    double predicted = 0.0;
    double measured = 0.0;
    double error = 0.0;  // relative to measured, 0 when nothing was measured
};

struct WholeRunComparison {
    std::string name;
    std::string profile;
    std::string format;
    int steps = 0;  // measured steps the counts cover
    std::vector<WholeRunRow> rows;
    std::vector<std::string> predicted_debug;  // what PT_XLA_DEBUG would print at the measured step
    std::vector<std::string> notes;
};

// A whole-run prediction against a metrics report, a PT_XLA_DEBUG log or a trace: counts compared
// at the same step (the measured MarkStep), compilation apart from execution, the gap between
// executions from a trace's host time per step.
WholeRunComparison compare_whole_run(const training_run::WholeRun& predicted,
                                     const MeasuredProfile& measured);
std::string format_whole_run_comparison(const WholeRunComparison& c);
std::string whole_run_comparison_json(const WholeRunComparison& c);

}  // namespace podsim::profile
