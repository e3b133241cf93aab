#include "profile/pod_viewer.hpp"

#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/diagnostics.hpp"
#include "profile/measured_profile.hpp"

namespace podsim::profile {
namespace {

// pod_viewer writes 64-bit integers as strings ("dataSize": "30661632").
double number(const nlohmann::json& j) {
    if (j.is_number()) return j.get<double>();
    if (j.is_string()) return std::stod(j.get<std::string>());
    throw std::invalid_argument("not a number");
}

}  // namespace

PodViewer read_pod_viewer(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) profile_error(path, 0, "cannot open the file");
    std::stringstream buffer;
    buffer << in.rdbuf();
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(buffer.str());
    } catch (const nlohmann::json::parse_error& e) {
        profile_error(path, e.byte, fmt::format("not valid JSON ({})", e.what()));
    }
    PodViewer pv;
    try {
        if (!j.is_object() || !j.contains("podStatsSequence"))
            profile_error(path, 0, "no podStatsSequence: not a pod_viewer file");
        const auto& env = j.value("runEnvironment", nlohmann::json::object());
        pv.tpu_type = env.value("tpuType", "");
        pv.cores = env.contains("tpuCoreCount") ? static_cast<int>(number(env["tpuCoreCount"])) : 0;
        pv.hosts = env.contains("hostCount") ? static_cast<int>(number(env["hostCount"])) : 0;
        const auto& steps = j["podStatsSequence"].at("podStatsMap");
        if (!steps.is_array() || steps.empty()) profile_error(path, 0, "podStatsMap has no step");
        const auto& step = steps[0];
        pv.step = step.contains("stepNum") ? static_cast<int>(number(step["stepNum"])) : 0;
        // Named copies: iterating a temporary returned by value() would dangle.
        const nlohmann::json all_reduces = step.value("allReduceOpDb", nlohmann::json::array());
        const nlohmann::json per_core = step.value("podStatsPerCore", nlohmann::json::object());
        for (const auto& ar : all_reduces) {
            pv.all_reduces.push_back(PodViewerAllReduce{
                ar.value("name", ""), number(ar.at("dataSize")), number(ar.at("durationUs")) * 1e-6,
                ar.contains("occurrences") ? static_cast<long>(number(ar["occurrences"])) : 0});
        }
        for (const auto& [id, core] : per_core.items()) {
            PodViewerCore c;
            c.core = std::stoi(id);
            c.chip = core.contains("chipId") ? static_cast<int>(number(core["chipId"])) : 0;
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
