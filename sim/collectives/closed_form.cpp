#include "collectives/closed_form.hpp"

#include <algorithm>

namespace podsim::collectives {
namespace {

double kind_factor(CollectiveKind kind, bool all_rings) {
    switch (kind) {
        case CollectiveKind::all_gather:
        case CollectiveKind::reduce_scatter:
            return 1.0;
        case CollectiveKind::all_reduce:
            return 2.0;
        // Bisection argument: on a ring each byte travels a quarter of the way around on average.
        case CollectiveKind::all_to_all:
            return all_rings ? 0.25 : 0.5;
        case CollectiveKind::collective_permute:
            return 1.0;
    }
    return 1.0;
}

}  // namespace

CollectiveTiming closed_form_ici(CollectiveKind kind, double bytes,
                                 const std::vector<network::AxisDimPart>& parts, double link_bandwidth,
                                 double hop_latency, IntraChipLink intra_chip) {
    CollectiveTiming t;
    long n = 1;
    for (const auto& p : parts) n *= p.size;
    if (n <= 1 || bytes <= 0.0) return t;

    auto bandwidth_of = [&](const network::AxisDimPart& p) {
        return p.dim == intra_chip.dim ? intra_chip.bandwidth : link_bandwidth;
    };
    if (kind == CollectiveKind::collective_permute) {
        // One neighbour exchange along the most local part.
        const auto& p = parts.front();
        t.bandwidth_time = bytes / bandwidth_of(p);
        t.latency_time = hop_latency * p.stride;
        t.time = t.bandwidth_time + t.latency_time;
        return t;
    }

    double aggregate_bandwidth = 0.0;  // into one chip, summed over the dimensions used concurrently
    double hops = 0.0;
    bool all_rings = true;
    for (const auto& p : parts) {
        if (p.size <= 1) continue;
        // A group with stride s shares each physical link with s - 1 interleaved groups.
        double per_direction = bandwidth_of(p) / p.stride;
        aggregate_bandwidth += p.wraps ? 2.0 * per_direction : per_direction;
        hops += (p.wraps ? p.size / 2 : p.size - 1) * static_cast<double>(p.stride);
        all_rings = all_rings && p.wraps;
    }
    double received = bytes * static_cast<double>(n - 1) / static_cast<double>(n);
    double factor = kind_factor(kind, all_rings);
    t.bandwidth_time = factor * received / aggregate_bandwidth;
    t.latency_time = (kind == CollectiveKind::all_reduce ? 2.0 : 1.0) * hops * hop_latency;
    t.time = std::max(t.bandwidth_time, t.latency_time);
    return t;
}

CollectiveTiming closed_form_dcn(CollectiveKind kind, double bytes, int slices, double bandwidth_per_chip,
                                 double latency) {
    CollectiveTiming t;
    if (slices <= 1 || bytes <= 0.0) return t;
    // A collective-permute sends the whole array to one other slice.
    double received = kind == CollectiveKind::collective_permute
                          ? bytes
                          : bytes * static_cast<double>(slices - 1) / static_cast<double>(slices);
    double factor = kind == CollectiveKind::all_reduce ? 2.0 : 1.0;
    t.bandwidth_time = factor * received / bandwidth_per_chip;
    t.latency_time = kind == CollectiveKind::collective_permute
                         ? latency
                         : factor * static_cast<double>(slices - 1) * latency;
    t.time = t.bandwidth_time + t.latency_time;
    return t;
}

}  // namespace podsim::collectives
