#include "profile/pod_viewer.hpp"
#include "profile/readers_common.hpp"

namespace podsim::profile {

MeasuredProfile read_pod_viewer_profile(const std::string& path) {
    PodViewer pv = read_pod_viewer(path);
    MeasuredProfile p;
    p.format = "pod-viewer";
    p.file = path;
    p.steps = 1;
    for (const auto& ar : pv.all_reduces) {
        // durationUs is per occurrence; occurrences count cores, so one occurrence per step.
        p.category_s["all-reduce"] += ar.duration_s;
        ++p.category_count["all-reduce"];
        p.ops.push_back(MeasuredOp{ar.name, "all-reduce", ar.duration_s, 1, ar.data_bytes, 0.0});
    }
    double total = 0.0, compute = 0.0;
    for (const auto& c : pv.per_core) {
        total += c.total_s;
        compute += c.high_flops_compute_s;
    }
    if (!pv.per_core.empty()) {
        p.step_time_s = total / static_cast<double>(pv.per_core.size());
        p.category_s["matmul"] = compute / static_cast<double>(pv.per_core.size());
    }
    return p;
}

}  // namespace podsim::profile
