#pragma once

// The parsers behind config/load.hpp, shared by its files (one per schema) and by sweep files.
// Each records its mistakes in `d` and returns what it could read.

#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/run_spec.hpp"
#include "config/yaml_reader.hpp"
#include "core/diagnostics.hpp"
#include "cost/calibration.hpp"
#include "hardware/topology_spec.hpp"
#include "workload/model_spec.hpp"

namespace podsim::config {

// Model and topology files already read, for sweeps that parse thousands of variants of one config.
struct LoadCache {
    std::map<std::string, workload::ModelSpec> models;
    std::map<std::string, hardware::TopologySpec> topologies;
};
std::shared_ptr<LoadCache> make_load_cache();

// search_paths.cpp
std::vector<std::string> yaml_stems(const std::filesystem::path& dir);
bool looks_like_path(const std::string& s);
// Resolves `model:`/`topology:` given as a name or a path; records an error when neither works.
std::optional<std::filesystem::path> resolve_reference(const detail::MapReader& r, const std::string& key,
                                                       const std::string& kind,
                                                       const std::filesystem::path& base_dir);
// The file a model or topology name or path (`kind`: models, topologies) stands for, as
// resolve_reference finds it; nothing when there is none.
std::optional<std::filesystem::path> find_reference(const std::string& value, const std::string& kind,
                                                    const std::filesystem::path& base_dir);
// "unknown topology 'x': no topologies/x.yaml" with a "did you mean" where the name is close to a
// known one (not where only its numbers differ: tpu-v7x is no typo of tpu-v2), and the known names.
std::string unknown_reference_message(const std::string& value, const std::string& kind,
                                      const std::vector<std::string>& known);
void check_schema(const detail::MapReader& r, const std::string& expected);

workload::ModelSpec parse_model(const YAML::Node& node, const std::string& file, const std::string& path,
                                core::Diagnostics& d);
hardware::TopologySpec parse_topology(const YAML::Node& node, const std::string& file,
                                      const std::string& path, core::Diagnostics& d);
// The run's `mesh:` (short or long form), against its slice and slices.
// `slices_ok`: whether `slices` read without error (else its default would only bring a wrong DCN
// product in its wake).
void parse_mesh(const detail::MapReader& run, RunSpec& spec, core::Diagnostics& d, bool slices_ok = true);
// `calibration:` inline or as a calibration file (path relative to base_dir), over `base`.
cost::Calibration parse_calibration(const YAML::Node& node, const std::string& file, const std::string& path,
                                    const std::filesystem::path& base_dir, cost::Calibration base,
                                    core::Diagnostics& d);
RunSpec parse_run(const YAML::Node& root, const std::string& file, const std::filesystem::path& base_dir,
                  const std::string& path, core::Diagnostics& d, LoadCache* cache = nullptr,
                  bool semantic_checks = true);
// For sweeps: a run config tree built in memory. Without semantic checks only each value's own
// errors are reported (a sweep value is wrong alone, or only in combination with other axes).
RunSpec parse_run_node(const YAML::Node& root, const std::string& file, const std::filesystem::path& base_dir,
                       core::Diagnostics& d, LoadCache* cache, bool semantic_checks = true);
// parse_run_node for a tree that differs from the one `parsed` came from, without a diagnostic, only
// in `name` and the batch keys under `training` (a sweep's batch axes): those are read again and the
// checks that involve the batch run again; the rest is copied.
RunSpec reparse_batch(const YAML::Node& root, const std::string& file, const RunSpec& parsed,
                      core::Diagnostics& d);

}  // namespace podsim::config
