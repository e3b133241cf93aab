#include "profile/measured_profile.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "core/diagnostics.hpp"
#include "cost/matmul_shape.hpp"
#include "profile/pod_viewer.hpp"

namespace podsim::profile {
namespace {

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

bool has(const std::string& s, const char* needle) {
    return s.find(needle) != std::string::npos;
}

}  // namespace

void profile_error(const std::string& path, std::size_t offset, const std::string& message) {
    core::Diagnostics d;
    // Profiles are not line-oriented: the byte offset says where the problem is.
    d.error({path, 0, 0}, "", offset > 0 ? fmt::format("at byte {}: {}", offset, message) : message);
    throw core::UserError(d);
}

std::optional<std::map<std::string, double>> matmul_time_by_shape(const MeasuredProfile& profile,
                                                                  int mxu_tile) {
    if (profile.matmul_s_by_narrowest_dim.empty() || profile.matmul_unshaped_s > 0) return std::nullopt;
    std::map<std::string, double> by_shape;
    for (const auto& [narrowest, seconds] : profile.matmul_s_by_narrowest_dim) {
        by_shape[std::string(cost::shape_class_name(cost::matmul_shape_class(narrowest, mxu_tile)))] +=
            seconds;
    }
    return by_shape;
}

std::string classify_op(const std::string& name, const std::string& hint) {
    const std::string n = lower(name);
    const std::string h = lower(hint);
    static const char* kPodsim[] = {"matmul",     "fusion",     "all-gather",         "reduce-scatter",
                                    "all-reduce", "all-to-all", "collective-permute", "copy",
                                    "host"};
    for (const char* c : kPodsim) {
        if (h == c) return c;
    }
    auto any = [&](std::initializer_list<const char*> words) {
        for (const char* w : words) {
            if (has(n, w) || has(h, w)) return true;
        }
        return false;
    };
    if (any({"all-reduce", "allreduce", "all_reduce"})) return "all-reduce";
    if (any({"all-gather", "allgather", "all_gather"})) return "all-gather";
    if (any({"reduce-scatter", "reducescatter", "reduce_scatter"})) return "reduce-scatter";
    if (any({"all-to-all", "alltoall", "all_to_all"})) return "all-to-all";
    if (any({"collective-permute", "sendrecv", "send-done", "recv-done", "ncclkernel_sendrecv"})) {
        return "collective-permute";
    }
    if (any({"nccl"})) return "all-reduce";  // other NCCL kernels (broadcast, reduce) move gradients too
    if (any({"memcpy", "memset", "copy-start", "copy-done", "copy.", "copy ", "data formatting"}) ||
        n == "copy") {
        return "copy";
    }
    if (any({"convolution", "gemm", "matmul", "dot", "cutlass", "xmma", "conv", "cublas", "mma", "scudnn",
             "winograd"}))
        return "matmul";
    return "fusion";
}

MeasuredProfile with_steps(MeasuredProfile p, int steps) {
    if (steps <= 0 || steps == p.steps) return p;
    const double scale = static_cast<double>(p.steps) / static_cast<double>(steps);
    for (auto& [category, seconds] : p.category_s) seconds *= scale;
    for (auto& [category, count] : p.category_count)
        count = static_cast<long>(static_cast<double>(count) * scale + 0.5);
    for (auto& [dim, seconds] : p.matmul_s_by_narrowest_dim) seconds *= scale;
    p.matmul_unshaped_s *= scale;
    p.step_time_s *= scale;
    p.steps = steps;
    std::erase_if(p.notes,
                  [](const std::string& note) { return note.find("validate --steps") != std::string::npos; });
    return p;
}

}  // namespace podsim::profile
