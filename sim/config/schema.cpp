#include "config/schema.hpp"

#include <map>

#include <fmt/format.h>

#include "config/run_keys.hpp"
#include "cost/calibration.hpp"
#include "hardware/topology_keys.hpp"
#include "parallel/parallelism.hpp"
#include "parallel/runtime_keys.hpp"
#include "workload/model_keys.hpp"
#include "workload/training_keys.hpp"

namespace podsim::config {

const std::vector<core::Key>& run_schema() {
    static const std::vector<core::Key> keys = [] {
        std::vector<core::Key> all(std::begin(kRunKeys), std::end(kRunKeys));
        all.insert(all.end(), std::begin(workload::kTrainingKeys), std::end(workload::kTrainingKeys));
        all.insert(all.end(), std::begin(parallel::kRuntimeKeys), std::end(parallel::kRuntimeKeys));
        all.insert(all.end(), std::begin(kWholeRunKeys), std::end(kWholeRunKeys));
        return all;
    }();
    return keys;
}

const std::vector<core::Key>& model_schema() {
    static const std::vector<core::Key> keys(std::begin(workload::kModelKeys),
                                             std::end(workload::kModelKeys));
    return keys;
}

const std::vector<core::Key>& topology_schema() {
    static const std::vector<core::Key> keys(std::begin(hardware::kTopologyKeys),
                                             std::end(hardware::kTopologyKeys));
    return keys;
}

const std::vector<core::Key>& validation_case_schema() {
    static const std::vector<core::Key> keys(std::begin(kValidationCaseKeys), std::end(kValidationCaseKeys));
    return keys;
}

const std::vector<core::Key>& collective_case_schema() {
    static const std::vector<core::Key> keys(std::begin(kCollectiveCaseKeys), std::end(kCollectiveCaseKeys));
    return keys;
}

const std::vector<core::Key>& calibration_file_schema() {
    static const std::vector<core::Key> keys(std::begin(kCalibrationFileKeys),
                                             std::end(kCalibrationFileKeys));
    return keys;
}

const std::vector<core::Key>& sweep_file_schema() {
    static const std::vector<core::Key> keys(std::begin(kSweepFileKeys), std::end(kSweepFileKeys));
    return keys;
}

namespace {

struct NamedSchema {
    std::string_view name;
    const std::vector<core::Key>& (*keys)();
    std::string_view title;
    std::string_view footer;
};

const NamedSchema kSchemas[] = {
    {"run", run_schema, "podsim.run/v1 — a run config (configs/*.yaml)",
     "Quantities carry units: 275 TFLOP/s, 32 GiB, 1.2 TB/s, 45 GB/s, 1 us, 3 ms."},
    {"model", model_schema, "podsim.model/v1 — an architecture (models/*.yaml)", ""},
    {"topology", topology_schema, "podsim.topology/v1 — chips and interconnect (topologies/*.yaml)",
     "Any number may be written as {value: 45 GB/s, source: \"where it comes from\"}."},
    {"validation-case", validation_case_schema,
     "podsim.validation/v1 — a published measurement (tests/validation/*.yaml)", ""},
    {"collective-case", collective_case_schema,
     "podsim.collective-validation/v1 — a measured collective (tests/validation/collectives/*.yaml)", ""},
    {"calibration-file", calibration_file_schema,
     "podsim.calibration/v1 — fitted cost-model parameters (podsim calibrate --out)", ""},
    {"sweep-file", sweep_file_schema, "podsim.sweep/v1 — many run configs (configs/sweeps/*.yaml)", ""},
};

}  // namespace

const std::vector<core::Key>* schema_named(std::string_view what) {
    for (const auto& s : kSchemas)
        if (s.name == what) return &s.keys();
    return nullptr;
}

std::vector<std::string> keys_under(const std::vector<core::Key>& schema, std::string_view prefix) {
    std::vector<std::string> out;
    for (const auto& key : schema) {
        std::string_view p = key.path;
        if (p.find('<') != std::string_view::npos) continue;
        if (prefix.empty()) {
            if (p.find('.') == std::string_view::npos) out.emplace_back(p);
        } else if (p.size() > prefix.size() + 1 && p.substr(0, prefix.size()) == prefix &&
                   p[prefix.size()] == '.' &&
                   p.substr(prefix.size() + 1).find('.') == std::string_view::npos) {
            out.emplace_back(p.substr(prefix.size() + 1));
        }
    }
    return out;
}

const std::vector<std::string>& run_keys_under(std::string_view prefix) {
    // Built once, like the schema itself: every mapping of the run schema (the parent of a key).
    static const std::map<std::string, std::vector<std::string>, std::less<>> table = [] {
        std::map<std::string, std::vector<std::string>, std::less<>> t;
        t.emplace("", keys_under(run_schema(), ""));
        for (const auto& key : run_schema()) {
            std::string_view path = key.path;
            for (auto dot = path.find('.'); dot != std::string_view::npos; dot = path.find('.', dot + 1)) {
                std::string parent(path.substr(0, dot));
                if (!t.count(parent)) t.emplace(parent, keys_under(run_schema(), parent));
            }
        }
        return t;
    }();
    static const std::vector<std::string> none;
    auto it = table.find(prefix);
    return it == table.end() ? none : it->second;
}

std::vector<std::string> explainable() {
    std::vector<std::string> names;
    for (const auto& s : kSchemas) names.emplace_back(s.name);
    names.emplace_back("calibration");
    names.emplace_back("parallelism");
    return names;
}

std::string explain(std::string_view what) {
    std::string out;
    for (const auto& s : kSchemas) {
        if (s.name != what) continue;
        out += fmt::format("{}\n\n", s.title);
        for (const auto& k : s.keys()) {
            std::string bounds = k.bounds_text();
            out += fmt::format("  {:<26} {:<36} default: {}{}\n", k.path, k.type_text(), k.default_text(),
                               bounds.empty() ? "" : fmt::format("  range: {}", bounds));
            out += fmt::format("  {:<26} {}\n", "", k.help);
            if (!k.source.empty()) out += fmt::format("  {:<26} source: {}\n", "", k.source);
        }
        if (!s.footer.empty()) out += fmt::format("\n{}\n", s.footer);
    }
    if (what == "parallelism") out += parallel::explain_parallelism();
    if (what == "calibration") {
        out += "cost-model parameters — override in a run config's `calibration:` block\n\n";
        for (const auto& p : cost::calibration_parameters()) {
            const bool time = p.unit == cost::ParameterUnit::time;
            std::string value =
                time ? fmt::format("{:g} s", p.default_value) : fmt::format("{:g}", p.default_value);
            const char* unit = time ? "time" : p.unit == cost::ParameterUnit::factor ? "factor" : "fraction";
            out += fmt::format("  {:<28} {:<9} default: {}  range: [{:g}, {:g}]\n", p.name, unit, value,
                               p.lower_bound, p.upper_bound);
            out += fmt::format("  {:<28} {}\n  {:<28} source: {}\n", "", p.help, "", p.source);
        }
    }
    return out;
}

}  // namespace podsim::config
