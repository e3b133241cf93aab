#include "profile/measured_profile.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <map>

#include "core/protobuf_wire.hpp"
#include "profile/readers_common.hpp"

namespace podsim::profile {

using core::Wire;
namespace {

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
    p.device = "tpu";
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

}  // namespace podsim::profile
