#include "profile/pt_xla_debug.hpp"

#include <regex>
#include <sstream>

#include <fmt/format.h>

namespace podsim::profile {
namespace {

const std::regex& too_frequent() {
    // torch_xla metrics_analysis.cpp: "%s: %s too frequent: %zu counts during %zu steps".
    static const std::regex re(R"(pt-xla-profiler: (\w+) too frequent: (\d+) counts during (\d+) steps)");
    return re;
}

}  // namespace

bool is_pt_xla_debug_log(const std::string& text) {
    return text.find("pt-xla-profiler:") != std::string::npos;
}

MeasuredProfile read_pt_xla_debug_log(const std::string& path, const std::string& text) {
    MeasuredProfile p;
    p.format = "pt-xla-debug";
    p.file = path;
    std::istringstream in(text);
    std::string line;
    std::size_t offset = 0;
    auto& steps_of = p.metric_steps;
    int last_step = 0;
    bool any = false;
    while (std::getline(in, line)) {
        std::smatch m;
        if (std::regex_search(line, m, too_frequent())) {
            any = true;
            const std::string metric = m[1];
            double count = 0.0;
            int steps = 0;
            try {
                count = std::stod(m[2]);
                steps = std::stoi(m[3]);
            } catch (const std::exception&) {
                profile_error(path, offset, "a count or step number out of range");
            }
            if (steps <= 0) profile_error(path, offset, "a 'too frequent' line with 0 steps");
            // Counts are process-wide and only grow: keep each metric's latest line.
            if (steps >= steps_of[metric]) {
                steps_of[metric] = steps;
                p.metric_counts[metric] = count;
            }
            last_step = std::max(last_step, steps);
        }
        offset += line.size() + 1;
    }
    if (!any)
        profile_error(path, 0, "no 'pt-xla-profiler: METRIC too frequent: N counts during M steps' line");
    p.steps = last_step;
    p.notes.push_back(
        "PT_XLA_DEBUG prints a metric only while it exceeds 0.5 per step: counts are compared at the step "
        "of each metric's last line, and step times are not in the log");
    return p;
}

}  // namespace podsim::profile
