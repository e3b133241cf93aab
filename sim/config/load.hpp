#pragma once

#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "config/run_spec.hpp"
#include "cost/calibration.hpp"
#include "hardware/topology_spec.hpp"
#include "workload/model_spec.hpp"

namespace podsim::config {

// Where bare names (`model: gpt2-2b`, `topology: tpu-v4`) are looked up: directories holding
// models/ and topologies/. In order: $PODSIM_HOME, the directories above `near` (the config file),
// the directories above the binary holding podsim (the Python extension, the executable), the
// data directory of the install prefix podsim was configured with, and, for a binary still in its
// build tree, the source tree. Above each directory D, D/share/podsim counts too (an install prefix).
std::vector<std::filesystem::path> data_roots(const std::filesystem::path& near);
// Where data_roots(near) looked, and how to point podsim at its data: for messages.
std::string data_roots_hint(const std::filesystem::path& near);

// configs/default.yaml of the first data root that has one.
std::optional<std::filesystem::path> default_config_path();

// Each loader reads and validates a whole file and throws core::UserError listing every mistake
// (FILE:LINE:COL: error: key.path: message) when there is any.
RunSpec load_run_file(const std::string& path);
RunSpec load_run_text(const std::string& yaml_text, const std::string& name,
                      const std::filesystem::path& base_dir);
workload::ModelSpec load_model_file(const std::string& path);
hardware::TopologySpec load_topology_file(const std::string& path);
// A topology by bare name or path, as a run config's `topology:` would take it.
hardware::TopologySpec load_topology(const std::string& name_or_path);
// A model by bare name or path, as a run config's `model:` would take it (errors at `what`).
workload::ModelSpec load_model(const std::string& name_or_path, const std::string& what = "--model");
// A calibration file (schema podsim.calibration/v1): its parameters over `base`.
cost::Calibration load_calibration_file(const std::string& path,
                                        cost::Calibration base = cost::Calibration::defaults());

// A published measurement with the config that reproduces it (schema podsim.validation/v1).
struct ValidationCase {
    std::string id;
    std::string file;
    std::string source;
    std::string notes;
    RunSpec run;
    std::map<std::string, double> measured;   // step_time_s, mfu_6n, all_reduce_fraction, ...
    std::map<std::string, double> tolerance;  // step_time_rel, all_reduce_fraction_abs, ...
    bool derived = false;                     // measured value derived from published throughput/MFU
    std::string profile;  // XLA's numbers the measured values come from (a path; #NAME for JSON lines)
    std::optional<std::string> expected_miss;
};

// Every *.yaml directly in `directory`, sorted by file name.
std::vector<ValidationCase> load_validation_suite(const std::string& directory);

// A measured collective (schema podsim.collective-validation/v1): one op on a slice, with either one
// measured time or an XProf pod-viewer file whose all-reduces are each compared.
struct CollectiveCase {
    std::string id;
    std::string file;
    std::string source;
    std::string setup;
    hardware::TopologySpec topology;
    hardware::SliceShape slice;
    network::MeshSpec mesh;
    std::string op;
    std::vector<std::string> axes;
    double bytes = 0.0;
    double measured_time = 0.0;  // seconds; 0 when pod_viewer is given
    std::string pod_viewer;      // path, resolved against the case file
    double tolerance_rel = 0.0;
    double tolerance_abs = 0.0;         // seconds
    double tolerance_median_rel = 0.0;  // for pod-viewer cases
    std::optional<std::string> expected_miss;
};

std::vector<CollectiveCase> load_collective_suite(const std::string& directory);

}  // namespace podsim::config
