#include "profile/measured_profile.hpp"

#include <map>
#include <sstream>

#include <fmt/format.h>

#include "core/csv.hpp"
#include "profile/readers_common.hpp"

namespace podsim::profile {

MeasuredProfile read_nvtx_projection_csv(const std::string& path, const std::string& text) {
    // nsys "NVTX GPU projection" (JAX-Toolbox nsys-jax): XlaModule ranges are program executions,
    // Thunk ranges are HLO ops (hlo_op=NAME) with their projected GPU time in ns. The program that
    // ran longest is the training step; only ops inside its executions count.
    std::istringstream in(text);
    std::string line;
    std::getline(in, line);
    struct Range {
        double start, duration;
        std::string name;
    };
    std::vector<Range> thunks;
    std::map<std::string, std::vector<Interval>> modules;
    std::size_t offset = line.size() + 1;
    while (std::getline(in, line)) {
        std::size_t line_offset = offset;
        offset += line.size() + 1;
        auto f = core::split_csv_line(line);
        if (f.size() < 3) profile_error(path, line_offset, "row with fewer than 3 columns");
        const std::string& name = f[0];
        if (f[1].empty() || f[2].empty()) continue;
        double start = 0.0, duration = 0.0;
        try {
            start = std::stod(f[1]) * 1e-9;
            duration = std::stod(f[2]) * 1e-9;
        } catch (const std::exception&) {
            profile_error(path, line_offset, fmt::format("'{}' or '{}' is not a number of ns", f[1], f[2]));
        }
        if (name.rfind("TSL:XlaModule:", 0) == 0) {
            modules[name].push_back({start, start + duration});
        } else if (name.rfind("TSL:Thunk:", 0) == 0) {
            auto at = name.find("hlo_op=");
            if (at == std::string::npos) continue;
            thunks.push_back({start, duration, name.substr(at + 7, name.find('#', at) - at - 7)});
        }
    }
    if (thunks.empty())
        profile_error(path, 0,
                      "no TSL:Thunk ranges with hlo_op=: not an NVTX GPU projection of an XLA program");
    MeasuredProfile p;
    p.format = "nvtx-gpu-projection";
    p.file = path;
    std::vector<Interval> steps;
    double longest = 0.0;
    for (const auto& [name, ranges] : modules) {
        double total = 0.0;
        for (const auto& r : ranges) total += r.second - r.first;
        if (total > longest) {
            longest = total;
            steps = ranges;
        }
    }
    std::map<std::string, MeasuredOp> ops;
    std::vector<Interval> device;
    for (const auto& t : thunks) {
        bool inside = steps.empty();
        for (const auto& s : steps)
            inside = inside || (t.start >= s.first && t.start + t.duration <= s.second);
        if (!inside) continue;
        auto& op = ops[t.name];
        op.name = t.name;
        op.category = classify_op(t.name);
        op.total_s += t.duration;
        ++op.occurrences;
        device.push_back({t.start, t.start + t.duration});
    }
    p.steps = steps.empty() ? 1 : static_cast<int>(steps.size());
    p.step_time_s = steps.empty() ? 0.0 : longest / static_cast<double>(steps.size());
    double window = steps.empty() ? union_length(device) : longest;
    return finish(std::move(p), ops, union_length(device), window);
}

}  // namespace podsim::profile
