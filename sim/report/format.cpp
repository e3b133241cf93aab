#include "report/format.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/quantity.hpp"
#include "core/time.hpp"
#include "report/report_fields.hpp"

namespace podsim::report {

std::string format_table(const RunReport& r) {
    using core::format_bytes;
    using core::format_seconds;
    std::string out;
    auto line = [&](std::string_view label, const std::string& value) {
        out += fmt::format("  {:<28} {}\n", label, value);
    };
    auto pct = [&](double part) {
        return r.step_time_s > 0 ? fmt::format("{:5.1f}%", 100.0 * part / r.step_time_s)
                                 : std::string("  -  ");
    };
    out += fmt::format("podsim: {}\n", r.name);
    const std::string chips = r.devices_per_chip > 1
                                  ? fmt::format("{} chip{}, {} devices", r.chips / r.devices_per_chip,
                                                r.chips / r.devices_per_chip == 1 ? "" : "s", r.chips)
                                  : fmt::format("{} chip{}", r.chips, r.chips == 1 ? "" : "s");
    out += fmt::format("  {} on {} slice {}{} ({}), mesh {}, {} ({} collectives)\n\n", r.model, r.topology,
                       r.slice, r.slices > 1 ? fmt::format(" x {} slices", r.slices) : std::string(), chips,
                       r.mesh, r.framework, r.async_collectives ? "async" : "synchronous");
    line("step time", format_seconds(r.step_time_s));
    line("tokens/s", fmt::format("{:.0f}  ({:.0f} tokens per step)", r.tokens_per_s, r.tokens_per_step));
    line("MFU", fmt::format("{:.1f}%  (convention {})", 100.0 * r.mfu, r.mfu_convention));
    line("HFU", fmt::format("{:.1f}%  (executed matmul FLOPs, remat included)", 100.0 * r.hfu));
    line("model FLOPs per step", fmt::format("{:.3e}", r.model_flops_per_step));
    out += "\nwhere the step went (adds up to the step time)\n";
    line("compute", fmt::format("{:>12}  {}", format_seconds(r.compute_s), pct(r.compute_s)));
    line("exposed communication", fmt::format("{:>12}  {}", format_seconds(r.exposed_communication_s),
                                              pct(r.exposed_communication_s)));
    line("host", fmt::format("{:>12}  {}", format_seconds(r.host_s), pct(r.host_s)));
    if (r.pipeline_stages > 1) {
        line("pipeline bubble",
             fmt::format(
                 "{:>12}  {}  (stage {} of {}; {}, {} microbatches x {} repeat{}: closed form {:.1f}% of "
                 "the pipelined time)",
                 format_seconds(r.pipeline_bubble_s), pct(r.pipeline_bubble_s), r.time_stage,
                 r.pipeline_stages, r.pipeline_schedule, r.pipeline_microbatches, r.pipeline_repeats,
                 r.pipeline_repeats == 1 ? "" : "s", 100.0 * r.pipeline_bubble_closed_form));
    }
    line("idle", fmt::format("{:>12}  {}", format_seconds(r.idle_s), pct(r.idle_s)));
    line("(communication overlapped)",
         fmt::format("{:>12}  of {} in collectives", format_seconds(r.overlapped_communication_s),
                     format_seconds(r.communication_s)));
    line("(compute by phase)", fmt::format("fwd {}, bwd {}, remat {}, optimizer {}",
                                           format_seconds(r.forward_s), format_seconds(r.backward_s),
                                           format_seconds(r.recompute_s), format_seconds(r.optimizer_s)));
    out += "\nmemory per chip (at the peak)\n";
    const auto& m = r.memory;
    const bool limited = m.hbm_bytes > m.capacity_bytes;
    line("peak",
         fmt::format("{} of {}{}  -> {}", format_bytes(m.peak_bytes), format_bytes(m.capacity_bytes),
                     limited ? fmt::format(" granted ({} HBM)", format_bytes(m.hbm_bytes)) : std::string(),
                     m.fits
                         ? fmt::format("fits, {} to spare ({:.1f}%)", format_bytes(m.margin_bytes),
                                       m.capacity_bytes > 0 ? 100.0 * m.margin_bytes / m.capacity_bytes : 0.0)
                         : fmt::format("DOES NOT FIT (over by {})", format_bytes(m.overflow_bytes))));
    line("params / grads / optimizer",
         fmt::format("{} / {} / {}", format_bytes(m.params_bytes), format_bytes(m.grads_bytes),
                     format_bytes(m.optimizer_bytes)));
    line("saved activations", format_bytes(m.activations_bytes));
    if (m.host_offload_bytes > 0)
        line("offloaded to host", format_bytes(m.host_offload_bytes) + " (not in the peak)");
    line("gathered weights", format_bytes(m.gathered_weights_bytes));
    if (r.prefetch_depth > 0 || r.prefetch_limited_by_memory) {
        line("FSDP prefetch",
             fmt::format("{} group{} ahead{}", r.prefetch_depth, r.prefetch_depth == 1 ? "" : "s",
                         r.prefetch_limited_by_memory ? " (lowered to fit in HBM)" : ""));
    }
    line("collective buffers", format_bytes(m.collective_buffers_bytes));
    line("temporaries", format_bytes(m.temporaries_bytes));
    if (!m.peak_op.empty()) line("peak reached during", m.peak_op);
    if (r.pipeline_stages > 1) {
        std::string peaks;
        for (std::size_t s = 0; s < r.stage_peak_bytes.size(); ++s)
            peaks += (s ? ", " : "") + format_bytes(r.stage_peak_bytes[s]);
        line("peak per pipeline stage", fmt::format("{}  (above: stage {})", peaks, r.memory_stage));
    }
    // Without the host's memory in the topology there is nothing to check against: say so.
    const bool host_known = r.host_capacity_bytes > 0;
    line("host RAM at model creation",
         fmt::format("{} per host of {} ({} process{}, {} init) -> {}", format_bytes(r.host_peak_bytes),
                     host_known ? format_bytes(r.host_capacity_bytes)
                                : fmt::format("unknown capacity ({} gives no host.host_memory)", r.topology),
                     r.host_processes, r.host_processes == 1 ? "" : "es",
                     r.host_full_model ? "full" : "sharded",
                     !host_known   ? "not checked"
                     : r.host_fits ? "fits"
                                   : "DOES NOT FIT"));
    line("compile time", fmt::format("{}{}", format_seconds(r.compile_time_s),
                                     r.recompile_every_step ? "  (recompiled every step: in the host time)"
                                                            : "  (once, not in the step)"));
    out += "\nop categories (device time)\n";
    out += fmt::format("  {:<20} {:>7} {:>12} {:>8}\n", "category", "count", "time", "share");
    for (const auto& s : r.op_stats) {
        // Host time is not device time: XProf's op stats leave it out of the shares too.
        std::string share =
            s.category == "host" ? std::string("-") : fmt::format("{:.1f}%", 100.0 * s.fraction);
        out += fmt::format("  {:<20} {:>7} {:>12} {:>8}\n", s.category, s.count, format_seconds(s.time_s),
                           share);
        if (s.category != "matmul" || r.matmul_shapes.size() < 2) continue;
        for (const auto& shape : r.matmul_shapes) {
            out +=
                fmt::format("    {:<18} {:>7} {:>12} {:>8}\n", shape.category + " shapes", shape.count,
                            format_seconds(shape.time_s), fmt::format("({:.0f}%)", 100.0 * shape.fraction));
        }
    }
    out += "\nresources\n";
    for (const auto& res : r.resources) {
        out += fmt::format("  {:<20} busy {:>12}  {:5.1f}%\n", res.name, format_seconds(res.busy_s),
                           100.0 * res.utilization);
    }
    return out;
}

namespace {

nlohmann::ordered_json list_json(const RunReport& r, std::string_view path) {
    auto out = nlohmann::ordered_json::array();
    if (path == "op_stats") {
        for (const auto& s : r.op_stats)
            out.push_back({{"category", s.category},
                           {"count", s.count},
                           {"time_s", s.time_s},
                           {"fraction", s.fraction}});
    } else if (path == "matmul_shapes") {
        for (const auto& s : r.matmul_shapes)
            out.push_back(
                {{"shape", s.category}, {"count", s.count}, {"time_s", s.time_s}, {"fraction", s.fraction}});
    } else if (path == "pipeline.stage_peak_bytes") {
        for (double bytes : r.stage_peak_bytes) out.push_back(bytes);
    } else if (path == "resources") {
        for (const auto& res : r.resources)
            out.push_back({{"name", res.name}, {"busy_s", res.busy_s}, {"utilization", res.utilization}});
    }
    return out;
}

}  // namespace

nlohmann::ordered_json number_json(FieldType type, double v) {
    if (std::isnan(v)) return nullptr;
    if (type == FieldType::boolean) return v != 0.0;
    if (type == FieldType::integer && std::fabs(v) < 9007199254740992.0)  // 2^53: exact
        return static_cast<long long>(v);
    return v;  // nlohmann writes a non-finite number as null
}

std::string format_json(const RunReport& r) {
    nlohmann::ordered_json j;
    j["schema"] = "podsim.report/v1";
    // Fields in registry order; "memory.peak_bytes" goes to j["memory"]["peak_bytes"].
    for (const auto& field : report_fields()) {
        auto dot = field.path.find('.');
        nlohmann::ordered_json value = field.type == FieldType::text ? nlohmann::ordered_json(field.text(r))
                                       : field.type == FieldType::list
                                           ? list_json(r, field.path)
                                           : number_json(field.type, field.number(r));
        if (dot == std::string_view::npos) {
            j[std::string(field.path)] = std::move(value);
        } else {
            j[std::string(field.path.substr(0, dot))][std::string(field.path.substr(dot + 1))] =
                std::move(value);
        }
    }
    // Names and ids come from user files: invalid UTF-8 becomes U+FFFD rather than an exception.
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string chrome_trace(const std::string& name, const parallel::DeviceProgram& program,
                         const scheduler::Timeline& timeline, const memory::MemoryProfile& memory) {
    auto us = [](core::Time t) { return static_cast<double>(t) / static_cast<double>(core::kMicrosecond); };
    // Written one event at a time, as a dump of the whole document would write it: a document of
    // millions of events held as JSON values took many times the text's size.
    std::string out = R"({"displayTimeUnit":"ms","traceEvents":[)";
    bool first = true;
    auto add = [&](const nlohmann::json& event) {
        if (!first) out += ',';
        first = false;
        // Names come from user files: invalid UTF-8 becomes U+FFFD rather than an exception.
        out += event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    };
    add({{"ph", "M"}, {"pid", 1}, {"name", "process_name"}, {"args", {{"name", "podsim: " + name}}}});
    for (std::size_t r = 0; r < program.resources.size(); ++r) {
        add({{"ph", "M"},
             {"pid", 1},
             {"tid", r},
             {"name", "thread_name"},
             {"args", {{"name", program.resources[r].name}}}});
        add({{"ph", "M"},
             {"pid", 1},
             {"tid", r},
             {"name", "thread_sort_index"},
             {"args", {{"sort_index", r}}}});
    }
    for (std::size_t i = 0; i < program.ops.size(); ++i) {
        const auto& op = program.ops[i];
        const auto& span = timeline.spans[i];
        nlohmann::json args = {
            {"phase", workload::phase_name(op.phase)}, {"layer", op.layer}, {"microbatch", op.microbatch}};
        if (parallel::is_collective(op.category)) {
            args["bytes"] = op.collective_bytes;
        } else if (op.category == parallel::OpCategory::copy) {
            args["bytes"] = op.bytes;
            args["direction"] = op.to_host ? "to host" : "to device";
        } else if (op.category != parallel::OpCategory::host) {
            args["flops"] = op.flops;
            args["hbm_bytes"] = op.bytes;
            if (op.category == parallel::OpCategory::matmul)
                args["narrowest_dim"] = std::min({op.mm_m, op.mm_n, op.mm_k});
        }
        add({{"ph", "X"},
             {"pid", 1},
             {"tid", op.resource},
             {"name", std::string(op.name)},
             {"cat", std::string(parallel::category_name(op.category))},
             {"ts", us(span.start)},
             {"dur", us(span.end - span.start)},
             {"args", std::move(args)}});
    }
    for (const auto& s : memory.samples)
        add({{"ph", "C"},
             {"pid", 1},
             {"name", "HBM live bytes"},
             {"ts", us(s.time)},
             {"args", {{"bytes", s.live_bytes}}}});
    out += "]}\n";
    return out;
}

}  // namespace podsim::report
