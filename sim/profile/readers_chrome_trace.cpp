#include "profile/measured_profile.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "profile/readers_common.hpp"

namespace podsim::profile {

namespace {

MeasuredProfile read_events(const std::string& path, nlohmann::json& j) {
    const nlohmann::json* events = nullptr;
    if (j.is_array()) {
        events = &j;
    } else if (j.is_object() && j.contains("traceEvents") && j["traceEvents"].is_array()) {
        events = &j["traceEvents"];
    } else {
        profile_error(path, 0, "no traceEvents: not a Chrome trace");
    }
    MeasuredProfile p;
    p.format = "chrome-trace";
    p.file = path;
    // Names of processes and threads, to find device tracks.
    std::map<std::int64_t, std::string> process;
    std::map<std::pair<std::int64_t, std::int64_t>, std::string> thread;
    auto id = [&](const nlohmann::json& v) -> std::int64_t {
        if (v.is_number_integer()) return v.get<std::int64_t>();
        if (v.is_number_float()) {
            // A double outside int64 cannot be converted (undefined behaviour); no profiler writes one.
            const double d = v.get<double>();
            if (!(d > -9.2e18 && d < 9.2e18))
                profile_error(path, 0, fmt::format("pid or tid {} is not an id (out of the int64 range)", d));
            return static_cast<std::int64_t>(d);
        }
        if (v.is_string())
            return static_cast<std::int64_t>(std::hash<std::string>{}(v.get<std::string>()) >> 1);
        return 0;
    };
    for (const auto& e : *events) {
        if (!e.is_object() || e.value("ph", "") != "M") continue;
        std::string name = e.contains("args") && e["args"].is_object() ? e["args"].value("name", "") : "";
        if (e.value("name", "") == "process_name") process[id(e.value("pid", nlohmann::json()))] = name;
        if (e.value("name", "") == "thread_name") {
            thread[{id(e.value("pid", nlohmann::json())), id(e.value("tid", nlohmann::json()))}] = name;
        }
    }
    static const std::set<std::string> podsim_categories = {
        "matmul",     "fusion",     "all-gather",         "reduce-scatter",
        "all-reduce", "all-to-all", "collective-permute", "host",
        "execute",  // a whole program's execution in podsim's whole-run traces
        "transfer"};
    std::map<std::string, MeasuredOp> ops;
    std::vector<Interval> device;
    std::vector<double> step_durations;
    double first = 1e300, last = -1e300;
    bool tpu_trace = false;
    for (const auto& [pid, name] : process)
        tpu_trace = tpu_trace || name.find("/device:TPU") != std::string::npos;
    std::int64_t device_pid = -1;
    for (const auto& [pid, name] : process) {
        if (name.rfind("/device:TPU:0", 0) == 0 || (device_pid < 0 && name.rfind("/device:", 0) == 0))
            device_pid = pid;
    }
    for (const auto& e : *events) {
        if (!e.is_object() || e.value("ph", "") != "X") continue;
        if (!e.contains("dur") || !e["dur"].is_number() || !e.contains("ts") || !e["ts"].is_number())
            continue;
        const std::string name = e.value("name", "");
        const std::string cat = e.contains("cat") && e["cat"].is_string() ? e["cat"].get<std::string>() : "";
        const double ts = e["ts"].get<double>() * 1e-6;
        const double dur = e["dur"].get<double>() * 1e-6;
        const std::int64_t pid = id(e.value("pid", nlohmann::json()));
        const std::int64_t tid = id(e.value("tid", nlohmann::json()));
        std::string thread_name = thread.count({pid, tid}) ? thread[{pid, tid}] : "";
        if (name.rfind("ProfilerStep#", 0) == 0) {
            step_durations.push_back(dur);
            first = std::min(first, ts);
            last = std::max(last, ts + dur);
            continue;
        }
        std::string category;
        if (podsim_categories.count(cat)) {
            category = cat;  // podsim's own --trace
        } else if (cat == "kernel") {
            category = classify_op(name);
            p.device = "gpu";
        } else if (cat == "gpu_memcpy" || cat == "gpu_memset") {
            category = "copy";
            p.device = "gpu";
        } else if (tpu_trace && pid == device_pid && thread_name == "XLA Ops") {
            category = classify_op(name);
            p.device = "tpu";
        } else if (tpu_trace && pid == device_pid && thread_name == "XLA Modules") {
            step_durations.push_back(dur);
            first = std::min(first, ts);
            last = std::max(last, ts + dur);
            continue;
        } else {
            continue;
        }
        if (category == "host" || category == "transfer") {
            // Host work of podsim's traces: no device busy time, but inside the step, so that a
            // gap between executions reads back as host time.
            if (step_durations.empty()) {
                first = std::min(first, ts);
                last = std::max(last, ts + dur);
            }
            continue;
        }
        auto& op = ops[name];
        op.name = name;
        op.category = category;
        op.total_s += dur;
        ++op.occurrences;
        if (e.contains("args") && e["args"].is_object()) {
            const auto& args = e["args"];
            if (args.contains("In msg nelems") && args["In msg nelems"].is_number()) {
                op.bytes += args["In msg nelems"].get<double>() * dtype_size(args.value("dtype", "float"));
            } else if (args.contains("bytes") && args["bytes"].is_number()) {
                op.bytes += args["bytes"].get<double>();
            }
            if (args.contains("narrowest_dim") && args["narrowest_dim"].is_number())
                op.narrowest_dim = args["narrowest_dim"].get<double>();
        }
        device.push_back({ts, ts + dur});
        if (step_durations.empty()) {
            first = std::min(first, ts);
            last = std::max(last, ts + dur);
        }
    }
    if (ops.empty())
        profile_error(path, 0, "no device ops found (GPU kernels, TPU XLA Ops, or podsim trace events)");
    if (!step_durations.empty()) {
        p.steps = static_cast<int>(step_durations.size());
        double total = 0.0;
        for (double d : step_durations) total += d;
        p.step_time_s = total / static_cast<double>(step_durations.size());
        // Only device work inside the steps counts.
        std::vector<Interval> inside;
        for (const auto& iv : device) {
            if (iv.first >= first && iv.second <= last) inside.push_back(iv);
        }
        return finish(std::move(p), ops, union_length(inside), last - first);
    }
    p.steps = 1;
    return finish(std::move(p), ops, union_length(device), last - first);
}

}  // namespace

MeasuredProfile read_chrome_trace(const std::string& path, const std::string& text) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        profile_error(path, e.byte, fmt::format("not valid JSON: {}", e.what()));
    } catch (const nlohmann::json::exception& e) {
        // out_of_range.406: a number such as 1e400 that no double holds.
        profile_error(path, 0, fmt::format("not readable JSON: {}", e.what()));
    }
    try {
        return read_events(path, j);
    } catch (const nlohmann::json::exception& e) {
        // A field of an unexpected type, such as "ph": 1.
        profile_error(path, 0, fmt::format("not a Chrome trace: {}", e.what()));
    }
}

}  // namespace podsim::profile
