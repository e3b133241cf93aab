#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace podsim::config {

// One key of an input schema: what `podsim explain` prints and what the loader accepts. The loader
// rejects any key not listed here, so this table is the single source of truth for key names.
struct KeyDoc {
    std::string_view path;  // dotted, e.g. "training.global_batch"
    std::string_view type;  // int, bool, string, enum, size, time, bandwidth, compute rate, mapping, ...
    std::string_view default_value;
    std::string_view help;
};

const std::vector<KeyDoc>& run_schema();
const std::vector<KeyDoc>& model_schema();
const std::vector<KeyDoc>& topology_schema();
const std::vector<KeyDoc>& validation_case_schema();

// Keys directly below `prefix` ("" for the top level) in `schema`.
std::vector<std::string> keys_under(const std::vector<KeyDoc>& schema, std::string_view prefix);

// `podsim explain [run|model|topology|calibration]`.
std::string explain(std::string_view what);
std::vector<std::string> explainable();

}  // namespace podsim::config
