#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "profile/measured_profile.hpp"

namespace podsim::profile {

MeasuredProfile read_xla_memory_jsonl(const std::string& path, const std::string& bytes,
                                      const std::string& entry) {
    // One JSON object per line (tools/xla_truth.py): "name", "device" (a GPU's device kind, or
    // "cpu xN" for programs compiled for N virtual CPU devices), "memory_analysis" (the fields of
    // jax's compiled.memory_analysis()), "bytes_limit" and "status" (ran, oom, compiled).
    std::vector<std::string> names;
    std::size_t start = 0;
    for (int line = 1; start < bytes.size(); ++line) {
        std::size_t end = bytes.find('\n', start);
        if (end == std::string::npos) end = bytes.size();
        const std::string text = bytes.substr(start, end - start);
        const std::size_t offset = start;
        start = end + 1;
        if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
        nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
        if (j.is_discarded() || !j.is_object())
            profile_error(path, offset, fmt::format("line {} is not a JSON object", line));
        const std::string name = j.value("name", "");
        names.push_back(name);
        if (name != entry) continue;
        const auto analysis = j.find("memory_analysis");
        if (analysis == j.end() || !analysis->is_object())
            profile_error(path, offset, fmt::format("entry {} has no memory_analysis", entry));
        auto number = [&](const char* key) {
            const auto it = analysis->find(key);
            if (it == analysis->end() || !it->is_number())
                profile_error(path, offset,
                              fmt::format("entry {}: memory_analysis.{} is missing", entry, key));
            return it->get<double>();
        };
        MeasuredProfile p;
        p.format = "xla-memory-analysis";
        p.file = path + "#" + entry;
        const std::string device = j.value("device", "");
        const bool cpu = device.rfind("cpu", 0) == 0;
        p.device = device.find("NVIDIA") != std::string::npos ? "gpu" : cpu ? "cpu" : "";
        XlaMemory m;
        m.module = entry;
        m.parameter_bytes = number("argument_size_in_bytes");
        m.temp_bytes = number("temp_size_in_bytes");
        // Outputs alias the donated arguments (alias_size_in_bytes): not counted twice.
        m.output_bytes = std::max(0.0, number("output_size_in_bytes") - number("alias_size_in_bytes"));
        m.host_temp_bytes = number("host_temp_size_in_bytes");
        // XLA:CPU's peak_memory_in_bytes leaves the temporaries out: arguments + temporaries there.
        m.peak_bytes =
            cpu ? m.parameter_bytes + m.temp_bytes + m.output_bytes : number("peak_memory_in_bytes");
        if (j.contains("bytes_limit") && j["bytes_limit"].is_number())
            m.bytes_limit = j["bytes_limit"].get<double>();
        const std::string status = j.value("status", "");
        if (status == "ran") m.ran = true;
        if (status == "oom") m.ran = false;
        p.xla_memory = m;
        p.notes.push_back(fmt::format("XLA's memory_analysis() on {}{}", device.empty() ? "?" : device,
                                      status.empty() ? "" : ", status " + status));
        return p;
    }
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    profile_error(path, 0, fmt::format("no entry named '{}' (entries: {})", entry, known));
}

}  // namespace podsim::profile
