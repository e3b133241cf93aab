// Readers of measured profiles: Chrome trace JSON, XProf xplane.pb (protobuf wire format), HLO op
// stats CSV, PyTorch/XLA metrics reports. Each reduces a profile to MeasuredProfile.
#include <algorithm>
#include <array>
#include <cctype>
#include <cstring>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/csv.hpp"
#include "core/diagnostics.hpp"
#include "profile/measured_profile.hpp"

namespace podsim::profile {
namespace {

// Dimensions of the (array) result of an HLO instruction's text, "%x = bf16[8,128]{1,0} op(...)";
// empty for tuples or when the text has no shape.
std::vector<double> hlo_output_dims(const std::string& text) {
    std::vector<double> dims;
    auto eq = text.find(" = ");
    if (eq == std::string::npos) return dims;
    auto open = text.find('[', eq);
    auto paren = text.find('(', eq);
    if (open == std::string::npos || (paren != std::string::npos && paren < open)) return dims;
    auto close = text.find(']', open);
    if (close == std::string::npos) return dims;
    std::stringstream in(text.substr(open + 1, close - open - 1));
    std::string item;
    while (std::getline(in, item, ',')) {
        char* end = nullptr;
        double d = std::strtod(item.c_str(), &end);
        if (end == item.c_str() || d <= 0) return {};
        dims.push_back(d);
    }
    return dims;
}

}  // namespace

double matmul_narrowest_dim(const std::string& hlo_text, double flops) {
    const std::vector<double> dims = hlo_output_dims(hlo_text);
    if (dims.size() < 2 || flops <= 0) return 0.0;
    double batch = 1.0;
    for (std::size_t i = 0; i + 2 < dims.size(); ++i) batch *= dims[i];
    const double m = dims[dims.size() - 2], n = dims.back();
    const double k = flops / (2.0 * batch * m * n);
    if (k < 1.0) return 0.0;
    return std::min({m, n, k});
}

namespace {

using Interval = std::pair<double, double>;

double union_length(std::vector<Interval> v) {
    std::sort(v.begin(), v.end());
    double total = 0.0, start = 0.0, end = -1e300;
    for (const auto& [a, b] : v) {
        if (a > end) {
            if (end > start) total += end - start;
            start = a;
            end = b;
        } else {
            end = std::max(end, b);
        }
    }
    if (end > start) total += end - start;
    return total;
}

// Totals per op name -> MeasuredProfile per step, with host gaps from the device busy time.
MeasuredProfile finish(MeasuredProfile p, const std::map<std::string, MeasuredOp>& ops, double device_busy_s,
                       double window_s) {
    if (p.steps <= 0) p.steps = 1;
    const double steps = static_cast<double>(p.steps);
    for (const auto& [name, op] : ops) {
        p.category_s[op.category] += op.total_s / steps;
        p.category_count[op.category] += static_cast<long>(static_cast<double>(op.occurrences) / steps + 0.5);
        p.ops.push_back(op);
        if (op.category == "matmul") {
            if (op.narrowest_dim > 0) {
                p.matmul_s_by_narrowest_dim[op.narrowest_dim] += op.total_s / steps;
            } else {
                p.matmul_unshaped_s += op.total_s / steps;
            }
        }
    }
    std::sort(p.ops.begin(), p.ops.end(),
              [](const MeasuredOp& a, const MeasuredOp& b) { return a.total_s > b.total_s; });
    if (p.ops.size() > 50) p.ops.resize(50);
    if (p.step_time_s <= 0.0) p.step_time_s = window_s / steps;
    double host = (window_s - device_busy_s) / steps;
    if (host > 0) p.category_s["host"] = host;
    return p;
}

double dtype_size(const std::string& dtype) {
    std::string d = dtype;
    for (char& c : d) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (d.find("bfloat16") != std::string::npos || d.find("half") != std::string::npos || d == "bf16" ||
        d == "fp16") {
        return 2;
    }
    if (d.find("double") != std::string::npos || d.find("int64") != std::string::npos || d == "long")
        return 8;
    if (d.find("int8") != std::string::npos || d.find("byte") != std::string::npos) return 1;
    return 4;
}

// ------------------------------------------------------------------ protobuf wire format

class Wire {
  public:
    Wire(const std::string& path, const std::string& data, std::size_t begin, std::size_t end)
        : path_(path), data_(data), pos_(begin), end_(end) {}
    bool done() const { return pos_ >= end_; }
    std::size_t pos() const { return pos_; }

    std::uint64_t varint() {
        std::uint64_t value = 0;
        for (int shift = 0; shift < 64; shift += 7) {
            if (pos_ >= end_) profile_error(path_, pos_, "truncated varint (the file ends inside a field)");
            auto byte = static_cast<unsigned char>(data_[pos_++]);
            value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
            if (byte < 0x80) return value;
        }
        profile_error(path_, pos_, "varint longer than 10 bytes: not a protobuf file");
    }
    // Reads a key; returns field number and wire type.
    std::pair<std::uint32_t, int> key() {
        std::uint64_t k = varint();
        return {static_cast<std::uint32_t>(k >> 3), static_cast<int>(k & 7)};
    }
    // A length-delimited field as a sub-reader.
    Wire sub() {
        std::uint64_t length = varint();
        if (length > end_ - pos_)
            profile_error(path_, pos_,
                          fmt::format("field of {} bytes runs past the end ({} left)", length, end_ - pos_));
        Wire w(path_, data_, pos_, pos_ + length);
        pos_ += length;
        return w;
    }
    std::string bytes() {
        Wire w = sub();
        return data_.substr(w.pos_, w.end_ - w.pos_);
    }
    double fixed64_double() {
        if (end_ - pos_ < 8) profile_error(path_, pos_, "truncated 64-bit field");
        double v;
        std::memcpy(&v, data_.data() + pos_, 8);
        pos_ += 8;
        return v;
    }
    void skip(int wire_type) {
        switch (wire_type) {
            case 0:
                varint();
                return;
            case 1:
                if (end_ - pos_ < 8) profile_error(path_, pos_, "truncated 64-bit field");
                pos_ += 8;
                return;
            case 2:
                sub();
                return;
            case 5:
                if (end_ - pos_ < 4) profile_error(path_, pos_, "truncated 32-bit field");
                pos_ += 4;
                return;
            default:
                profile_error(path_, pos_,
                              fmt::format("unknown wire type {}: not an XSpace protobuf", wire_type));
        }
    }

  private:
    const std::string& path_;
    const std::string& data_;
    std::size_t pos_;
    std::size_t end_;
};

struct XStat {
    std::int64_t metadata_id = 0;
    double number = 0.0;
    bool is_number = false;
    std::string text;
    std::uint64_t ref = 0;
};

XStat read_stat(Wire w) {
    XStat s;
    while (!w.done()) {
        auto [field, type] = w.key();
        switch (field) {
            case 1:
                s.metadata_id = static_cast<std::int64_t>(w.varint());
                break;
            case 2:
                s.number = w.fixed64_double(), s.is_number = true;
                break;
            case 3:
                s.number = static_cast<double>(w.varint()), s.is_number = true;
                break;
            case 4:
                s.number = static_cast<double>(static_cast<std::int64_t>(w.varint())), s.is_number = true;
                break;
            case 5:
                s.text = w.bytes();
                break;
            case 7:
                s.ref = w.varint();
                break;
            default:
                w.skip(type);
        }
    }
    return s;
}

struct XEventMeta {
    std::string name, display_name;
    std::vector<XStat> stats;
};

}  // namespace

MeasuredProfile read_xplane(const std::string& path, const std::string& data) {
    MeasuredProfile p;
    p.format = "xplane";
    p.file = path;
    Wire space(path, data, 0, data.size());
    bool any_plane = false;
    bool used_device = false;
    std::map<std::string, MeasuredOp> ops;
    double busy = 0.0, window = 0.0;
    while (!space.done()) {
        auto [field, type] = space.key();
        if (field != 1 || type != 2) {
            space.skip(type);
            continue;
        }
        any_plane = true;
        Wire plane = space.sub();
        std::string name;
        std::map<std::int64_t, XEventMeta> events;
        std::map<std::int64_t, std::string> stat_names;
        std::vector<Wire> lines;
        while (!plane.done()) {
            auto [f, t] = plane.key();
            if (f == 2) {
                name = plane.bytes();
            } else if (f == 3) {
                lines.push_back(plane.sub());
            } else if (f == 4 || f == 5) {
                Wire entry = plane.sub();
                std::int64_t id = 0;
                while (!entry.done()) {
                    auto [ef, et] = entry.key();
                    if (ef == 1) {
                        id = static_cast<std::int64_t>(entry.varint());
                    } else if (ef == 2) {
                        Wire meta = entry.sub();
                        XEventMeta em;
                        std::string stat_name;
                        while (!meta.done()) {
                            auto [mf, mt] = meta.key();
                            if (mf == 2) {
                                (f == 4 ? em.name : stat_name) = meta.bytes();
                            } else if (mf == 4 && f == 4) {
                                em.display_name = meta.bytes();
                            } else if (mf == 5 && f == 4) {
                                em.stats.push_back(read_stat(meta.sub()));
                            } else {
                                meta.skip(mt);
                            }
                        }
                        if (f == 4) {
                            events[id] = std::move(em);
                        } else {
                            stat_names[id] = stat_name;
                        }
                    } else {
                        entry.skip(et);
                    }
                }
            } else {
                plane.skip(t);
            }
        }
        // SPMD: every device runs the same program; read the first device plane.
        if (used_device || name.rfind("/device:", 0) != 0) continue;
        used_device = true;
        auto stat_text = [&](const XStat& s) {
            if (!s.text.empty()) return s.text;
            auto it = stat_names.find(static_cast<std::int64_t>(s.ref));
            return it != stat_names.end() ? it->second : std::string();
        };
        std::vector<Interval> device;
        std::map<std::string, std::pair<long, double>> modules;  // name -> (count, total)
        double first = 1e300, last = -1e300;
        for (Wire& line : lines) {
            std::string line_name;
            std::vector<Wire> line_events;
            while (!line.done()) {
                auto [f, t] = line.key();
                if (f == 2) {
                    line_name = line.bytes();
                } else if (f == 4) {
                    line_events.push_back(line.sub());
                } else {
                    line.skip(t);
                }
            }
            bool is_ops = line_name == "XLA Ops";
            bool is_modules = line_name == "XLA Modules";
            if (!is_ops && !is_modules) continue;
            for (Wire& e : line_events) {
                std::int64_t meta_id = 0;
                double offset_s = 0.0, duration_s = 0.0;
                std::vector<XStat> stats;
                while (!e.done()) {
                    auto [f, t] = e.key();
                    if (f == 1) {
                        meta_id = static_cast<std::int64_t>(e.varint());
                    } else if (f == 2) {
                        offset_s = static_cast<double>(e.varint()) * 1e-12;
                    } else if (f == 3) {
                        duration_s = static_cast<double>(e.varint()) * 1e-12;
                    } else if (f == 4) {
                        stats.push_back(read_stat(e.sub()));
                    } else {
                        e.skip(t);
                    }
                }
                const XEventMeta& meta = events[meta_id];
                std::string op_name = meta.display_name.empty() ? meta.name : meta.display_name;
                if (is_modules) {
                    auto& m = modules[op_name];
                    ++m.first;
                    m.second += duration_s;
                    first = std::min(first, offset_s);
                    last = std::max(last, offset_s + duration_s);
                    continue;
                }
                std::string category_hint;
                double flops = 0.0, bytes_accessed = 0.0;
                for (const std::vector<XStat>* list :
                     std::array<const std::vector<XStat>*, 2>{&meta.stats, &stats}) {
                    for (const auto& s : *list) {
                        std::string stat = stat_names.count(s.metadata_id) ? stat_names[s.metadata_id] : "";
                        if (stat == "hlo_category") category_hint = stat_text(s);
                        if (stat == "flops" && s.is_number) flops = s.number;
                        if (stat == "bytes_accessed" && s.is_number) bytes_accessed = s.number;
                    }
                }
                // HLO text names start "%name = shape op(...)": keep the instruction name.
                std::string short_name = op_name;
                if (!short_name.empty() && short_name[0] == '%') {
                    short_name = short_name.substr(1, short_name.find(' ') - 1);
                }
                std::string category = classify_op(short_name, category_hint);
                if (category_hint == "convolution" ||
                    category_hint.find("convolution") != std::string::npos) {
                    category = "matmul";
                }
                auto& op = ops[short_name];
                op.name = short_name;
                op.category = category;
                op.total_s += duration_s;
                ++op.occurrences;
                op.flops += flops;
                op.bytes += bytes_accessed;
                if (category == "matmul" && op.narrowest_dim <= 0 && flops > 0) {
                    op.narrowest_dim = matmul_narrowest_dim(op_name, flops);
                }
                device.push_back({offset_s, offset_s + duration_s});
            }
        }
        // Steps: executions of the most frequent program.
        long steps = 0;
        double step_total = 0.0;
        for (const auto& [module, stat] : modules) {
            if (stat.first > steps) {
                steps = stat.first;
                step_total = stat.second;
            }
        }
        p.steps = steps > 0 ? static_cast<int>(steps) : 1;
        p.step_time_s = steps > 0 ? step_total / static_cast<double>(steps) : 0.0;
        busy = union_length(device);
        window = last > first ? last - first : busy;
    }
    if (!any_plane) profile_error(path, 0, "no planes: not an XProf XSpace (.xplane.pb) file");
    if (!used_device) profile_error(path, 0, "no /device: plane with XLA Ops in this XSpace");
    return finish(std::move(p), ops, busy, window);
}

MeasuredProfile read_chakra_et(const std::string& path, const std::string& data) {
    // MLCommons Chakra execution trace (schema et_def.proto): a stream of varint-length-prefixed
    // messages, GlobalMetadata then Node {id 1, name 2, type 3, duration_micros 7, attr 10}. GPU
    // work is the nodes whose attribute is_cpu_op is false; collectives carry comm_type and
    // comm_size. The trace has durations but no timeline: the step is the sum of GPU work.
    Wire stream(path, data, 0, data.size());
    std::map<std::string, MeasuredOp> ops;
    double busy = 0.0;
    bool first = true;
    while (!stream.done()) {
        Wire message = stream.sub();
        if (first) {
            first = false;  // GlobalMetadata
            continue;
        }
        std::string name;
        std::uint64_t type = 0;
        double duration_s = 0.0;
        bool cpu = true;
        std::int64_t comm_type = -1;
        double comm_bytes = 0.0;
        while (!message.done()) {
            auto [f, t] = message.key();
            if (f == 2 && t == 2) {
                name = message.bytes();
            } else if (f == 3 && t == 0) {
                type = message.varint();
            } else if (f == 7 && t == 0) {
                duration_s = static_cast<double>(message.varint()) * 1e-6;
            } else if (f == 10 && t == 2) {
                Wire attr = message.sub();
                std::string attr_name;
                std::uint64_t int_value = 0;
                bool has_int = false;
                while (!attr.done()) {
                    auto [af, at] = attr.key();
                    if (af == 1 && at == 2) {
                        attr_name = attr.bytes();
                    } else if ((af == 9 || af == 13 || af == 27 || af == 7 || af == 11) && at == 0) {
                        int_value = attr.varint();
                        has_int = true;
                    } else {
                        attr.skip(at);
                    }
                }
                if (attr_name == "is_cpu_op" && has_int) cpu = int_value != 0;
                if (attr_name == "comm_type" && has_int) comm_type = static_cast<std::int64_t>(int_value);
                if (attr_name == "comm_size" && has_int) comm_bytes = static_cast<double>(int_value);
            } else {
                message.skip(t);
            }
        }
        if (cpu || duration_s <= 0.0) continue;
        std::string category = classify_op(name);
        if (type == 7) {  // COMM_COLL_NODE: CollectiveCommType
            switch (comm_type) {
                case 0:
                    category = "all-reduce";
                    break;
                case 6:
                    category = "all-to-all";
                    break;
                case 7:
                case 8:
                    category = "reduce-scatter";
                    break;
                default:
                    category = "all-gather";
                    break;  // all-gather, gather, scatter, broadcast
            }
        }
        auto& op = ops[name];
        op.name = name;
        op.category = category;
        op.total_s += duration_s;
        op.bytes += comm_bytes;
        ++op.occurrences;
        busy += duration_s;
    }
    if (ops.empty()) profile_error(path, 0, "no GPU nodes with durations: not a Chakra execution trace");
    MeasuredProfile p;
    p.format = "chakra-et";
    p.file = path;
    p.notes.push_back("Chakra traces have durations but no timeline: the step time is the sum of GPU work");
    return finish(std::move(p), ops, busy, busy);
}

MeasuredProfile read_chrome_trace(const std::string& path, const std::string& text) {
    nlohmann::json j;
    try {
        j = nlohmann::json::parse(text);
    } catch (const nlohmann::json::parse_error& e) {
        profile_error(path, e.byte, fmt::format("not valid JSON: {}", e.what()));
    }
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
    auto id = [](const nlohmann::json& v) -> std::int64_t {
        if (v.is_number()) return v.get<std::int64_t>();
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
        "all-reduce", "all-to-all", "collective-permute", "host"};
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
        } else if (cat == "gpu_memcpy" || cat == "gpu_memset") {
            category = "copy";
        } else if (tpu_trace && pid == device_pid && thread_name == "XLA Ops") {
            category = classify_op(name);
        } else if (tpu_trace && pid == device_pid && thread_name == "XLA Modules") {
            step_durations.push_back(dur);
            first = std::min(first, ts);
            last = std::max(last, ts + dur);
            continue;
        } else {
            continue;
        }
        if (category == "host") continue;
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

MeasuredProfile read_hlo_op_stats_csv(const std::string& path, const std::string& text) {
    // TensorBoard's HLO Op Stats table, exported: one row per op with category, occurrences and
    // self time (us). Columns are found by their header, case-insensitively.
    std::istringstream in(text);
    std::string header;
    std::getline(in, header);
    auto columns = core::split_csv_line(header);
    auto find = [&](std::initializer_list<const char*> names) -> int {
        for (std::size_t i = 0; i < columns.size(); ++i) {
            std::string c = columns[i];
            for (char& ch : c) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
            for (const char* n : names) {
                if (c == n) return static_cast<int>(i);
            }
        }
        return -1;
    };
    int op_col = find({"operation", "op name", "hlo op name", "op"});
    int cat_col = find({"category", "op category", "hlo category"});
    int occ_col = find({"#occurrences", "occurrences", "# occurrences"});
    int self_col =
        find({"total self-time (us)", "total self time (us)", "self time (us)", "total self-time"});
    if (op_col < 0 || self_col < 0) {
        profile_error(path, 0,
                      "not an HLO op stats CSV: needs 'Operation' and 'Total self-time (us)' columns");
    }
    MeasuredProfile p;
    p.format = "hlo-op-stats";
    p.file = path;
    std::map<std::string, MeasuredOp> ops;
    double busy = 0.0;
    std::string line;
    std::size_t offset = header.size() + 1;
    while (std::getline(in, line)) {
        std::size_t line_offset = offset;
        offset += line.size() + 1;
        if (line.empty() || line == "\r") continue;
        auto f = core::split_csv_line(line);
        if (static_cast<int>(f.size()) <= std::max({op_col, self_col, cat_col, occ_col})) {
            profile_error(path, line_offset,
                          fmt::format("row has {} columns, the header {}", f.size(), columns.size()));
        }
        MeasuredOp op;
        op.name = f[static_cast<std::size_t>(op_col)];
        try {
            op.total_s = std::stod(f[static_cast<std::size_t>(self_col)]) * 1e-6;
            op.occurrences = occ_col >= 0 ? std::stol(f[static_cast<std::size_t>(occ_col)]) : 1;
        } catch (const std::exception&) {
            profile_error(path, line_offset,
                          fmt::format("'{}' is not a number", f[static_cast<std::size_t>(self_col)]));
        }
        std::string hint = cat_col >= 0 ? f[static_cast<std::size_t>(cat_col)] : "";
        op.category = classify_op(op.name, hint);
        std::string h = hint;
        for (char& c : h) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (h.find("convolution") != std::string::npos) op.category = "matmul";
        busy += op.total_s;
        ops[op.name] = op;
    }
    if (ops.empty()) profile_error(path, 0, "no rows");
    p.steps = 1;
    p.notes.push_back("HLO op stats hold totals over the profiled steps; give --steps to compare per step");
    return finish(std::move(p), ops, busy, busy);
}

MeasuredProfile read_nvtx_projection_csv(const std::string& path, const std::string& text) {
    // nsys "NVTX GPU projection" (JAX-Toolbox nsys-jax): XlaModule ranges are program executions,
    // Thunk ranges are HLO ops (hlo_op=NAME) with their projected GPU time in ns. The program that
    // ran longest is the training step; only ops inside its executions count.
    std::istringstream in(text);
    std::string line;
    std::getline(in, line);
    struct Range {
        double start, duration;
        std::string name;
    };
    std::vector<Range> thunks;
    std::map<std::string, std::vector<Interval>> modules;
    std::size_t offset = line.size() + 1;
    while (std::getline(in, line)) {
        std::size_t line_offset = offset;
        offset += line.size() + 1;
        auto f = core::split_csv_line(line);
        if (f.size() < 3) profile_error(path, line_offset, "row with fewer than 3 columns");
        const std::string& name = f[0];
        if (f[1].empty() || f[2].empty()) continue;
        double start = 0.0, duration = 0.0;
        try {
            start = std::stod(f[1]) * 1e-9;
            duration = std::stod(f[2]) * 1e-9;
        } catch (const std::exception&) {
            profile_error(path, line_offset, fmt::format("'{}' or '{}' is not a number of ns", f[1], f[2]));
        }
        if (name.rfind("TSL:XlaModule:", 0) == 0) {
            modules[name].push_back({start, start + duration});
        } else if (name.rfind("TSL:Thunk:", 0) == 0) {
            auto at = name.find("hlo_op=");
            if (at == std::string::npos) continue;
            thunks.push_back({start, duration, name.substr(at + 7, name.find('#', at) - at - 7)});
        }
    }
    if (thunks.empty())
        profile_error(path, 0,
                      "no TSL:Thunk ranges with hlo_op=: not an NVTX GPU projection of an XLA program");
    MeasuredProfile p;
    p.format = "nvtx-gpu-projection";
    p.file = path;
    std::vector<Interval> steps;
    double longest = 0.0;
    for (const auto& [name, ranges] : modules) {
        double total = 0.0;
        for (const auto& r : ranges) total += r.second - r.first;
        if (total > longest) {
            longest = total;
            steps = ranges;
        }
    }
    std::map<std::string, MeasuredOp> ops;
    std::vector<Interval> device;
    for (const auto& t : thunks) {
        bool inside = steps.empty();
        for (const auto& s : steps)
            inside = inside || (t.start >= s.first && t.start + t.duration <= s.second);
        if (!inside) continue;
        auto& op = ops[t.name];
        op.name = t.name;
        op.category = classify_op(t.name);
        op.total_s += t.duration;
        ++op.occurrences;
        device.push_back({t.start, t.start + t.duration});
    }
    p.steps = steps.empty() ? 1 : static_cast<int>(steps.size());
    p.step_time_s = steps.empty() ? 0.0 : longest / static_cast<double>(steps.size());
    double window = steps.empty() ? union_length(device) : longest;
    return finish(std::move(p), ops, union_length(device), window);
}

MeasuredProfile read_pytorch_xla_metrics(const std::string& path, const std::string& text) {
    // torch_xla.debug.metrics.metrics_report(): "Metric: NAME" blocks with TotalSamples and
    // Accumulator, "Counter: NAME" with Value.
    MeasuredProfile p;
    p.format = "pytorch-xla-metrics";
    p.file = path;
    std::istringstream in(text);
    std::string line, metric;
    std::map<std::string, double> samples, accumulated, counters;
    auto parse_duration = [&](const std::string& s) {
        // "01m02s234ms567.890us", "123ms456.789us", "2.34s": sum the parts.
        double total = 0.0;
        std::size_t i = 0;
        while (i < s.size()) {
            std::size_t j = i;
            while (j < s.size() && (std::isdigit(static_cast<unsigned char>(s[j])) || s[j] == '.')) ++j;
            if (j == i) break;
            double v = std::stod(s.substr(i, j - i));
            std::size_t k = j;
            while (k < s.size() && std::isalpha(static_cast<unsigned char>(s[k]))) ++k;
            std::string unit = s.substr(j, k - j);
            if (unit == "h")
                total += v * 3600;
            else if (unit == "m")
                total += v * 60;
            else if (unit == "s")
                total += v;
            else if (unit == "ms")
                total += v * 1e-3;
            else if (unit == "us")
                total += v * 1e-6;
            else if (unit == "ns")
                total += v * 1e-9;
            i = k;
        }
        return total;
    };
    while (std::getline(in, line)) {
        auto trim = [](std::string s) {
            s.erase(0, s.find_first_not_of(" \t"));
            s.erase(s.find_last_not_of(" \t\r") + 1);
            return s;
        };
        line = trim(line);
        if (line.rfind("Metric: ", 0) == 0) {
            metric = line.substr(8);
        } else if (line.rfind("Counter: ", 0) == 0) {
            metric = "counter:" + line.substr(9);
        } else if (line.rfind("TotalSamples: ", 0) == 0) {
            samples[metric] = std::stod(line.substr(14));
        } else if (line.rfind("Accumulator: ", 0) == 0) {
            accumulated[metric] = parse_duration(line.substr(13));
        } else if (line.rfind("Value: ", 0) == 0) {
            try {
                counters[metric] = std::stod(line.substr(7));
            } catch (const std::exception&) {
            }
        }
    }
    if (!samples.count("ExecuteTime") && !samples.count("CompileTime")) {
        profile_error(path, 0, "no CompileTime or ExecuteTime metric: not a PyTorch/XLA metrics report");
    }
    double executions = samples.count("ExecuteTime") ? samples["ExecuteTime"] : 0.0;
    double compiles = samples.count("CompileTime") ? samples["CompileTime"] : 0.0;
    p.steps = executions > 0 ? static_cast<int>(executions) : 1;
    if (executions > 0) p.step_time_s = accumulated["ExecuteTime"] / executions;
    if (compiles > 0) p.category_s["compile"] = accumulated["CompileTime"] / std::max(1.0, executions);
    if (samples.count("TransferFromServerTime") && executions > 0) {
        p.category_s["copy"] = accumulated["TransferFromServerTime"] / executions;
    }
    // PyTorch/XLA's debug mode flags a graph that recompiles: more than 0.5 compiles per step after
    // the first (warm-up) compilation.
    if (executions > 1 && (compiles - 1.0) / (executions - 1.0) > 0.5) {
        p.notes.push_back(fmt::format(
            "compiles every step: {} compilations for {} executions. A graph that changes every step "
            "(dynamic "
            "shapes, Python scalars, print of tensors) recompiles every step; that is the most common reason "
            "a "
            "measured step is slower than predicted (model it with runtime.recompile_every_step: true)",
            compiles, executions));
    }
    p.ops.push_back(
        MeasuredOp{"CompileTime", "compile", accumulated["CompileTime"], static_cast<long>(compiles), 0, 0});
    p.ops.push_back(MeasuredOp{"ExecuteTime", "execute", accumulated["ExecuteTime"],
                               static_cast<long>(executions), 0, 0});
    return p;
}

}  // namespace podsim::profile
