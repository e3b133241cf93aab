#include <cmath>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "core/diagnostics.hpp"
#include "profile/measured_profile.hpp"

namespace podsim::profile {

namespace {

// The file is line-oriented: its mistakes are reported at their line.
[[noreturn]] void fail(const std::string& path, int line, const std::string& key,
                       const std::string& message) {
    core::Diagnostics d;
    d.error({path, line, 1}, key, message);
    throw core::UserError(d);
}

// A string field: absent or null is empty, another type a mistake (nlohmann's value() would throw).
std::string text_field(const nlohmann::json& object, const char* key, const std::string& path, int line) {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return "";
    if (!it->is_string()) fail(path, line, key, fmt::format("expected a string, found {}", it->dump()));
    return it->get<std::string>();
}

// Byte counts, as XLA's int64 fields hold them.
constexpr double kMaxBytes = 9223372036854775807.0;

}  // namespace

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
        start = end + 1;
        if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
        nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
        if (j.is_discarded() || !j.is_object()) fail(path, line, "", "not a JSON object (one per line)");
        const std::string name = text_field(j, "name", path, line);
        names.push_back(name);
        if (name != entry) continue;
        const auto analysis = j.find("memory_analysis");
        if (analysis == j.end() || !analysis->is_object())
            fail(path, line, "memory_analysis", fmt::format("entry {} has no memory_analysis object", entry));
        auto number = [&](const char* key) {
            const auto it = analysis->find(key);
            if (it == analysis->end() || !it->is_number())
                fail(path, line, fmt::format("memory_analysis.{}", key),
                     fmt::format(
                         "entry {}: {}", entry,
                         it == analysis->end() ? "missing" : "expected a number, found " + it->dump()));
            const double count = it->get<double>();
            if (!std::isfinite(count) || count < 0.0 || count > kMaxBytes)
                fail(path, line, fmt::format("memory_analysis.{}", key),
                     fmt::format("entry {}: {} is no byte count (0 to 2^63 - 1)", entry, it->dump()));
            return count;
        };
        MeasuredProfile p;
        p.format = "xla-memory-analysis";
        p.file = path + "#" + entry;
        const std::string device = text_field(j, "device", path, line);
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
        if (const auto limit = j.find("bytes_limit"); limit != j.end() && !limit->is_null()) {
            const double count = limit->is_number() ? limit->get<double>() : -1.0;
            if (!std::isfinite(count) || count <= 0.0 || count > kMaxBytes)
                fail(path, line, "bytes_limit",
                     fmt::format("entry {}: {} is no byte count (1 to 2^63 - 1)", entry, limit->dump()));
            m.bytes_limit = count;
        }
        const std::string status = text_field(j, "status", path, line);
        if (status == "ran") m.ran = true;
        if (status == "oom") m.ran = false;
        p.xla_memory = m;
        p.notes.push_back(fmt::format("XLA's memory_analysis() on {}{}", device.empty() ? "?" : device,
                                      status.empty() ? "" : ", status " + status));
        return p;
    }
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    if (entry.empty())
        profile_error(path, 0,
                      fmt::format("JSON lines of XLA's memory_analysis(), one compiled step per line: name "
                                  "one as {}#NAME (entries: {})",
                                  path, known));
    profile_error(path, 0, fmt::format("no entry named '{}' (entries: {})", entry, known));
}

}  // namespace podsim::profile
