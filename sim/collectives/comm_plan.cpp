#include "collectives/comm_plan.hpp"

#include <algorithm>

#include "core/assert.hpp"

namespace podsim::collectives {
namespace {

using network::AxisDimPart;
using network::Torus;

class Planner {
  public:
    Planner(const Torus& torus, double hop_latency) : torus_(torus), hop_latency_(hop_latency) {}

    // Chip at `position` along `dim` on the representative line (all other coordinates 0).
    int chip(int dim, int position) const {
        network::Coord c{0, 0, 0, 0};
        const int length = torus_.shape()[static_cast<std::size_t>(dim)];
        c[static_cast<std::size_t>(dim)] = ((position % length) + length) % length;
        return torus_.chip_at(c);
    }

    // Links from `position`, `steps` hops in `direction` along `dim`.
    std::vector<int> path(int dim, int position, int steps, int direction) const {
        std::vector<int> links;
        for (int i = 0; i < steps; ++i) {
            int link = torus_.link_from(chip(dim, position + direction * i), dim, direction);
            PODSIM_ASSERT(link >= 0, "collective path leaves the slice");
            links.push_back(link);
        }
        return links;
    }

    // Start positions of every group of `part` on the representative line.
    std::vector<int> group_starts(const AxisDimPart& part) const {
        const int length = torus_.shape()[static_cast<std::size_t>(part.dim)];
        const int block = part.size * part.stride;
        std::vector<int> starts;
        for (int b = 0; b < length; b += block) {
            for (int offset = 0; offset < part.stride; ++offset) starts.push_back(b + offset);
        }
        return starts;
    }

    // All-gather stage along one part: each group gathers `gathered` bytes (shard x size).
    double gather_stage(const AxisDimPart& part, double gathered, std::vector<Flow>& flows) const {
        const int n = part.size;
        const int s = part.stride;
        for (int start : group_starts(part)) {
            if (part.wraps) {
                double per_direction = gathered * (n - 1) / (2.0 * n);
                for (int i = 0; i < n; ++i) {
                    int position = start + i * s;
                    flows.push_back(Flow{path(part.dim, position, s, +1), per_direction});
                    flows.push_back(Flow{path(part.dim, position, s, -1), per_direction});
                }
            } else {
                for (int i = 0; i + 1 < n; ++i) {
                    int position = start + i * s;
                    flows.push_back(Flow{path(part.dim, position, s, +1), gathered * (i + 1) / n});
                    flows.push_back(Flow{path(part.dim, position + s, s, -1), gathered * (n - 1 - i) / n});
                }
            }
        }
        double hops = (part.wraps ? n / 2 : n - 1) * static_cast<double>(s);
        return hops * hop_latency_;
    }

    // Each member sends `per_peer` bytes to every other member, the shortest way round.
    double exchange_stage(const AxisDimPart& part, double per_peer, std::vector<Flow>& flows) const {
        const int n = part.size;
        const int s = part.stride;
        int longest = 0;
        for (int start : group_starts(part)) {
            for (int a = 0; a < n; ++a) {
                for (int b = 0; b < n; ++b) {
                    if (a == b) continue;
                    int forward = ((b - a) % n + n) % n;
                    int backward = n - forward;
                    int position = start + a * s;
                    if (!part.wraps) {
                        int direction = b > a ? +1 : -1;
                        flows.push_back(
                            Flow{path(part.dim, position, std::abs(b - a) * s, direction), per_peer});
                        longest = std::max(longest, std::abs(b - a) * s);
                    } else if (forward < backward) {
                        flows.push_back(Flow{path(part.dim, position, forward * s, +1), per_peer});
                        longest = std::max(longest, forward * s);
                    } else if (backward < forward) {
                        flows.push_back(Flow{path(part.dim, position, backward * s, -1), per_peer});
                        longest = std::max(longest, backward * s);
                    } else {
                        flows.push_back(Flow{path(part.dim, position, forward * s, +1), per_peer / 2});
                        flows.push_back(Flow{path(part.dim, position, backward * s, -1), per_peer / 2});
                        longest = std::max(longest, forward * s);
                    }
                }
            }
        }
        return longest * hop_latency_;
    }

  private:
    const Torus& torus_;
    double hop_latency_;
};

std::vector<CommPhase> gather_phases(const Planner& planner, const std::vector<AxisDimPart>& parts,
                                     double bytes, long group_size) {
    const std::size_t k = parts.size();
    std::vector<CommPhase> phases(k);
    const double shard = bytes / static_cast<double>(k) / static_cast<double>(group_size);
    for (std::size_t c = 0; c < k; ++c) {
        double held = shard;  // what each member of sub-collective c holds before the stage
        for (std::size_t j = 0; j < k; ++j) {
            const AxisDimPart& part = parts[(c + j) % k];
            double gathered = held * part.size;
            double latency = planner.gather_stage(part, gathered, phases[j].flows);
            phases[j].latency = std::max(phases[j].latency, latency);
            held = gathered;
        }
    }
    return phases;
}

}  // namespace

CommPlan plan_collective(const Torus& torus, CollectiveKind kind, double bytes,
                         const std::vector<AxisDimPart>& all_parts, double hop_latency,
                         double launch_overhead) {
    CommPlan plan;
    plan.kind = kind;
    plan.bytes = bytes;
    std::vector<AxisDimPart> parts;
    for (const auto& p : all_parts) {
        if (p.size > 1) parts.push_back(p);
    }
    long n = 1;
    for (const auto& p : parts) n *= p.size;
    plan.group_size = static_cast<int>(n);
    if (n <= 1 || bytes <= 0.0) return plan;
    Planner planner(torus, hop_latency);

    switch (kind) {
        case CollectiveKind::all_gather:
            plan.phases = gather_phases(planner, parts, bytes, n);
            break;
        case CollectiveKind::reduce_scatter: {
            plan.phases = gather_phases(planner, parts, bytes, n);
            std::reverse(plan.phases.begin(), plan.phases.end());
            break;
        }
        case CollectiveKind::all_reduce: {
            auto up = gather_phases(planner, parts, bytes, n);
            plan.phases.assign(up.rbegin(), up.rend());
            plan.phases.insert(plan.phases.end(), up.begin(), up.end());
            break;
        }
        case CollectiveKind::all_to_all: {
            // `bytes` is the per-chip buffer times the group size; each stage moves a chip's whole
            // buffer one dimension closer to its destinations.
            const double buffer = bytes / static_cast<double>(n);
            for (const auto& part : parts) {
                CommPhase phase;
                phase.latency = planner.exchange_stage(part, buffer / part.size, phase.flows);
                plan.phases.push_back(std::move(phase));
            }
            break;
        }
        case CollectiveKind::collective_permute: {
            const AxisDimPart& part = parts.front();
            CommPhase phase;
            Planner& p = planner;
            for (int start : p.group_starts(part)) {
                for (int i = 0; i < part.size; ++i) {
                    int position = start + i * part.stride;
                    bool last = i + 1 == part.size;
                    if (last && !part.wraps) {
                        // No wraparound: the last member's data goes back along the line.
                        phase.flows.push_back(
                            Flow{p.path(part.dim, position, (part.size - 1) * part.stride, -1), bytes});
                    } else {
                        phase.flows.push_back(Flow{p.path(part.dim, position, part.stride, +1), bytes});
                    }
                }
            }
            phase.latency = hop_latency * part.stride * (part.wraps ? 1 : part.size - 1);
            plan.phases.push_back(std::move(phase));
            break;
        }
    }
    if (!plan.phases.empty()) plan.phases.front().latency += launch_overhead;
    for (const auto& phase : plan.phases)
        for (const auto& flow : phase.flows)
            plan.links.insert(plan.links.end(), flow.links.begin(), flow.links.end());
    std::sort(plan.links.begin(), plan.links.end());
    plan.links.erase(std::unique(plan.links.begin(), plan.links.end()), plan.links.end());
    return plan;
}

}  // namespace podsim::collectives
