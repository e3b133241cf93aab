#pragma once

// Helpers shared by the profile readers (readers_*.cpp), one reader per format.

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "profile/measured_profile.hpp"

namespace podsim::profile {

using Interval = std::pair<double, double>;

// Length of the union of [start, end) intervals.
double union_length(std::vector<Interval> v);

// Totals per op name -> MeasuredProfile per step, with host gaps from the device busy time.
MeasuredProfile finish(MeasuredProfile p, const std::map<std::string, MeasuredOp>& ops, double device_busy_s,
                       double window_s);

// Bytes per element of a dtype as profiles spell it (bf16, "c10::BFloat16", int64, ...); 4 when unknown.
double dtype_size(const std::string& dtype);

// An XProf pod-viewer JSON file as a profile: its all-reduces and per-core step and compute times.
MeasuredProfile read_pod_viewer_profile(const std::string& path);

}  // namespace podsim::profile
