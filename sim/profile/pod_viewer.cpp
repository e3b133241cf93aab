#include "profile/pod_viewer.hpp"

#include <climits>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/diagnostics.hpp"
#include "profile/measured_profile.hpp"

namespace podsim::profile {
namespace {

// pod_viewer writes 64-bit integers as strings ("dataSize": "30661632").
double number(const nlohmann::json& j) {
    double value = 0.0;
    if (j.is_number())
        value = j.get<double>();
    else if (j.is_string())
        value = std::stod(j.get<std::string>());
    else
        throw std::invalid_argument("not a number: " + j.dump());
    if (!std::isfinite(value)) throw std::out_of_range("not a finite number: " + j.dump());
    return value;
}

// Counts and ids: a number that fits an int (casting a larger double is undefined behaviour).
int integer(const nlohmann::json& j) {
    const double value = number(j);
    if (value < static_cast<double>(INT_MIN) || value > static_cast<double>(INT_MAX))
        throw std::out_of_range(fmt::format("{} is out of range for a count", value));
    return static_cast<int>(value);
}

}  // namespace

PodViewer read_pod_viewer(const std::string& path) {
    const std::string text = read_file_bytes(path);
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        profile_error(path, e.byte, fmt::format("not valid JSON ({})", e.what()));
    } catch (const nlohmann::json::exception& e) {
        // out_of_range.406: a number such as 1e400 that no double holds.
        profile_error(path, 0, fmt::format("not readable JSON ({})", e.what()));
    }
    PodViewer pv;
    try {
        if (!j.is_object() || !j.contains("podStatsSequence"))
            profile_error(path, 0, "no podStatsSequence: not a pod_viewer file");
        const auto& env = j.value("runEnvironment", nlohmann::json::object());
        pv.tpu_type = env.value("tpuType", "");
        pv.cores = env.contains("tpuCoreCount") ? integer(env["tpuCoreCount"]) : 0;
        pv.hosts = env.contains("hostCount") ? integer(env["hostCount"]) : 0;
        const auto& steps = j["podStatsSequence"].at("podStatsMap");
        if (!steps.is_array() || steps.empty()) profile_error(path, 0, "podStatsMap has no step");
        const auto& step = steps[0];
        pv.step = step.contains("stepNum") ? integer(step["stepNum"]) : 0;
        // Named copies: iterating a temporary returned by value() would dangle.
        const nlohmann::json all_reduces = step.value("allReduceOpDb", nlohmann::json::array());
        const nlohmann::json per_core = step.value("podStatsPerCore", nlohmann::json::object());
        for (const auto& ar : all_reduces) {
            pv.all_reduces.push_back(PodViewerAllReduce{
                ar.value("name", ""), number(ar.at("dataSize")), number(ar.at("durationUs")) * 1e-6,
                ar.contains("occurrences") ? integer(ar["occurrences"]) : 0});
        }
        for (const auto& item : per_core.items()) {
            // Not a structured binding: clang 14 cannot capture one in the lambda below.
            const std::string id = item.key();
            const nlohmann::json& core = item.value();
            PodViewerCore c;
            c.core = std::stoi(id);
            c.chip = core.contains("chipId") ? integer(core["chipId"]) : 0;
            auto us = [&](const char* key) { return core.contains(key) ? number(core[key]) * 1e-6 : 0.0; };
            c.total_s = us("totalDurationUs");
            c.high_flops_compute_s = us("highFlopsComputeUs");
            c.all_reduce_s = us("crsDurationUs");
            c.send_s = us("sendDurationUs");
            c.recv_s = us("recvDurationUs");
            c.host_infeed_s = us("hostInfeedDurationUs");
            pv.per_core.push_back(c);
        }
    } catch (const core::UserError&) {
        throw;
    } catch (const std::exception& e) {
        profile_error(path, 0, fmt::format("unexpected structure: {}", e.what()));
    }
    return pv;
}

}  // namespace podsim::profile
