#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/key.hpp"

namespace podsim::config {

// The keys of each input schema, from their declarations (core::Key tables: config/run_keys.hpp,
// workload/model_keys.hpp, workload/training_keys.hpp, parallel/runtime_keys.hpp,
// hardware/topology_keys.hpp). The loader rejects any key not listed, reads defaults and bounds
// from them, and `podsim explain` prints them.
const std::vector<core::Key>& run_schema();
const std::vector<core::Key>& model_schema();
const std::vector<core::Key>& topology_schema();
const std::vector<core::Key>& validation_case_schema();
const std::vector<core::Key>& collective_case_schema();
const std::vector<core::Key>& calibration_file_schema();
const std::vector<core::Key>& sweep_file_schema();

// A schema by the name `podsim explain` takes (run, model, topology, validation-case, ...), or null.
const std::vector<core::Key>* schema_named(std::string_view what);

// Keys directly below `prefix` ("" for the top level) in `schema`; free names (<axis>) excluded.
std::vector<std::string> keys_under(const std::vector<core::Key>& schema, std::string_view prefix);
// keys_under(run_schema(), prefix), worked out once for every mapping of the run schema (every
// config of a sweep asks); empty for a prefix that is not one.
const std::vector<std::string>& run_keys_under(std::string_view prefix);

// `podsim explain WHAT`.
std::string explain(std::string_view what);
std::vector<std::string> explainable();

}  // namespace podsim::config
