#pragma once

#include <vector>

#include "collectives/collective_kind.hpp"
#include "hardware/topology_spec.hpp"
#include "network/axis_mapping.hpp"

namespace podsim::collectives {

struct CollectiveTiming {
    double time = 0.0;            // seconds, what the collective takes
    double bandwidth_time = 0.0;  // seconds, the bytes-over-links term
    double latency_time = 0.0;    // seconds, the hops term
};

// Scaling-book closed forms ("How to Scale Your Model", sharding chapter) for one group spanning
// `parts` of the torus. `bytes` is the full array: the all-gather's output, the reduce-scatter's
// and all-reduce's input, the all-to-all's per-chip buffer times the group size, and for
// collective-permute the bytes each chip sends.
//   all-gather on a bidirectional ring of N:  T = max(hop_latency * N/2, V (N-1)/N / (2 W))
//   on a line (no wraparound):               twice the bandwidth term, N-1 hops
//   k dimensions used concurrently:           bandwidths add (the book's "divided by k")
//   reduce-scatter = all-gather, all-reduce = 2 x all-gather, all-to-all = all-gather / 4 on rings
// `link_bandwidth` is one direction of one link, already scaled by any efficiency. On chips with
// several devices (v2/v3), the part on dimension `intra_chip.dim` runs over the chip's own link at
// `intra_chip.bandwidth` per direction instead (topology chip.intra_chip_bandwidth).
struct IntraChipLink {
    int dim = -1;            // the device grid's intra-chip dimension, or -1
    double bandwidth = 0.0;  // bytes/s per direction
};
CollectiveTiming closed_form_ici(CollectiveKind kind, double bytes,
                                 const std::vector<network::AxisDimPart>& parts, double link_bandwidth,
                                 double hop_latency, IntraChipLink intra_chip = {});

// Across slices over the data-center network: a ring over `slices` in which each chip exchanges its
// own share (`bytes` is the full array as above, per chip) at `bandwidth_per_chip`.
CollectiveTiming closed_form_dcn(CollectiveKind kind, double bytes, int slices, double bandwidth_per_chip,
                                 double latency);

}  // namespace podsim::collectives
