#include "report/report_fields.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace podsim::report {

namespace {

constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();

// Accessors as capture-less lambdas (function pointers): a row reads each field with one call.
#define PODSIM_NUMBER(expr) [](const RunReport& r) { return static_cast<double>(expr); }
#define PODSIM_TEXT(expr) [](const RunReport& r) { return std::string(expr); }

using enum FieldType;

// The report, field by field, in the order the JSON report writes them. A field with a column name
// is a column of a sweep's rows: what one reads to compare configs, and what keep and sort may name
// (a resumed or merged sweep ranks the rows of results.csv, so sort can only use its columns).
const ReportField kFields[] = {
    {"name", "name", text, "", "the run's name (config `name`, else its file name)", nullptr,
     PODSIM_TEXT(r.name)},
    {"model", "", text, "", "model name", nullptr, PODSIM_TEXT(r.model)},
    {"topology", "", text, "", "topology name", nullptr, PODSIM_TEXT(r.topology)},
    {"slice", "", text, "", "shape of one slice in chips, e.g. 4x4x8", nullptr, PODSIM_TEXT(r.slice)},
    {"slices", "", integer, "slices", "slices joined over DCN", PODSIM_NUMBER(r.slices)},
    {"mesh", "", text, "", "logical mesh, e.g. ici{fsdp=16,tensor=4}", nullptr, PODSIM_TEXT(r.mesh)},
    {"framework", "", text, "", "jax, pytorch-xla or pytorch-xla-spmd", nullptr, PODSIM_TEXT(r.framework)},
    {"async_collectives", "", boolean, "", "collectives overlap compute (runtime.async_collectives)",
     PODSIM_NUMBER(r.async_collectives)},
    {"chips", "chips", integer, "chips", "chips of all slices",
     PODSIM_NUMBER(r.chips / std::max(1, r.devices_per_chip))},
    {"devices", "devices", integer, "devices",
     "devices of all slices, as the mesh counts them: chips x devices_per_chip", PODSIM_NUMBER(r.chips)},
    {"devices_per_chip", "", integer, "devices",
     "JAX/PyTorch-XLA devices per chip the mesh uses (v2/v3: 2, one per TensorCore; else 1)",
     PODSIM_NUMBER(r.devices_per_chip)},
    {"params", "params", integer, "parameters", "model parameters", PODSIM_NUMBER(r.params)},
    {"step_time_s", "step_time_s", real, "s",
     "one training step (compute + exposed communication + host + idle)", PODSIM_NUMBER(r.step_time_s)},
    {"tokens_per_step", "tokens_per_step", real, "tokens", "tokens (ViT: images) per step",
     PODSIM_NUMBER(r.tokens_per_step)},
    {"tokens_per_s", "tokens_per_s", real, "tokens/s", "tokens (ViT: images) per second over all chips",
     PODSIM_NUMBER(r.tokens_per_s)},
    {"model_flops_per_step", "", real, "FLOP",
     "model FLOPs per step (6·N·tokens, + attention per mfu_convention)",
     PODSIM_NUMBER(r.model_flops_per_step)},
    {"hardware_flops_per_step", "", real, "FLOP",
     "matmul FLOPs executed per step on all chips, recomputation included",
     PODSIM_NUMBER(r.hardware_flops_per_step)},
    {"peak_flops_per_chip", "", real, "FLOP/s",
     "peak matmul rate of one device (a chip, or a v2/v3 TensorCore) in the compute dtype",
     PODSIM_NUMBER(r.peak_flops_per_chip)},
    {"mfu", "mfu", real, "fraction", "model FLOPs utilisation: model FLOPs / (step time · chips · peak)",
     PODSIM_NUMBER(r.mfu)},
    {"hfu", "hfu", real, "fraction",
     "hardware FLOPs utilisation: hardware_flops_per_step / (step time · chips · peak)",
     PODSIM_NUMBER(r.hfu)},
    {"mfu_convention", "", text, "",
     "6N, or 6N+attention (attention FLOPs counted, PaLM appendix B; report.mfu_attention)", nullptr,
     PODSIM_TEXT(r.mfu_convention)},
    {"memory.peak_bytes", "peak_bytes", real, "B", "peak HBM per chip", PODSIM_NUMBER(r.memory.peak_bytes)},
    {"memory.capacity_bytes", "capacity_bytes", real, "B",
     "what the runtime lets XLA allocate per chip (JAX's bytes_limit): the topology's chip.hbm_bytes_limit, "
     "else its HBM",
     PODSIM_NUMBER(r.memory.capacity_bytes)},
    {"memory.hbm_bytes", "", real, "B", "HBM per chip (chip.hbm_capacity)",
     PODSIM_NUMBER(r.memory.hbm_bytes)},
    {"memory.fits", "fits", boolean, "", "the peak fits in what the runtime grants (capacity_bytes)",
     PODSIM_NUMBER(r.memory.fits)},
    {"memory.overflow_bytes", "", real, "B", "peak minus capacity when it does not fit, else 0",
     PODSIM_NUMBER(r.memory.overflow_bytes)},
    {"memory.margin_bytes", "", real, "B",
     "capacity minus peak: room left (negative: how far it does not fit)",
     PODSIM_NUMBER(r.memory.margin_bytes)},
    {"memory.host_offload_bytes", "", real, "B",
     "remat offload: residuals held in pinned host memory at once per chip (XLA's host_temp_size_in_bytes); "
     "not in the HBM peak",
     PODSIM_NUMBER(r.memory.host_offload_bytes)},
    {"memory.params_bytes", "", real, "B", "parameters per chip at the peak",
     PODSIM_NUMBER(r.memory.params_bytes)},
    {"memory.grads_bytes", "", real, "B", "gradients per chip at the peak",
     PODSIM_NUMBER(r.memory.grads_bytes)},
    {"memory.optimizer_bytes", "", real, "B", "optimizer state (and master weights) per chip",
     PODSIM_NUMBER(r.memory.optimizer_bytes)},
    {"memory.activations_bytes", "", real, "B", "activations saved for the backward pass at the peak",
     PODSIM_NUMBER(r.memory.activations_bytes)},
    {"memory.gathered_weights_bytes", "", real, "B", "FSDP-gathered weights live at the peak",
     PODSIM_NUMBER(r.memory.gathered_weights_bytes)},
    {"memory.collective_buffers_bytes", "", real, "B",
     "unsharded gradients awaiting their reduce-scatter, at the peak",
     PODSIM_NUMBER(r.memory.collective_buffers_bytes)},
    {"memory.temporaries_bytes", "", real, "B",
     "outputs of ops not kept for the backward pass, live at the peak",
     PODSIM_NUMBER(r.memory.temporaries_bytes)},
    {"memory.peak_op", "", text, "",
     "the op during which the peak is reached: a compute op, or the collective compute waits on", nullptr,
     PODSIM_TEXT(r.memory.peak_op)},
    {"memory.peak_time_s", "", real, "s", "time into the step of the peak",
     PODSIM_NUMBER(r.memory.peak_time_s)},
    {"host_memory.peak_bytes_per_host", "host_peak_bytes", real, "B",
     "host RAM per host while creating the model", PODSIM_NUMBER(r.host_peak_bytes)},
    {"host_memory.capacity_bytes", "", real, "B",
     "host RAM per host (topology host.host_memory); null when the topology does not give it",
     PODSIM_NUMBER(r.host_capacity_bytes > 0 ? r.host_capacity_bytes : kUnknown)},
    {"host_memory.fits", "host_fits", boolean, "",
     "the host peak fits in host RAM; null when that is unknown",
     PODSIM_NUMBER(r.host_capacity_bytes > 0 ? (r.host_fits ? 1.0 : 0.0) : kUnknown)},
    {"host_memory.processes_per_host", "", integer, "processes", "framework processes per host",
     PODSIM_NUMBER(r.host_processes)},
    {"host_memory.init", "", text, "", "full (each process builds the whole model) or sharded", nullptr,
     PODSIM_TEXT(r.host_full_model ? "full" : "sharded")},
    {"compile_time_s", "compile_time_s", real, "s", "compiling the step (once, not in the step time)",
     PODSIM_NUMBER(r.compile_time_s)},
    {"fsdp_prefetch.depth", "", integer, "groups", "FSDP all-gathers issued this many parameter groups ahead",
     PODSIM_NUMBER(r.prefetch_depth)},
    {"fsdp_prefetch.limited_by_memory", "", boolean, "", "HBM lowered the depth below runtime.prefetch_depth",
     PODSIM_NUMBER(r.prefetch_limited_by_memory)},
    {"pipeline.stages", "pipeline_stages", integer, "stages", "pipeline stages (1: none)",
     PODSIM_NUMBER(r.pipeline_stages)},
    {"pipeline.schedule", "", text, "", "none, gpipe (one repeat) or circular (MaxText's schedules)", nullptr,
     PODSIM_TEXT(r.pipeline_schedule)},
    {"pipeline.microbatches", "", integer, "microbatches", "microbatches through the stages per step",
     PODSIM_NUMBER(r.pipeline_microbatches)},
    {"pipeline.repeats", "", integer, "repeats", "times each microbatch passes through every stage",
     PODSIM_NUMBER(r.pipeline_repeats)},
    {"pipeline.bubble_closed_form", "", real, "fraction",
     "(stages - 1) / (repeats x microbatches + stages - 1): the bubble's share of the pipelined time for "
     "stages that take the same time",
     PODSIM_NUMBER(r.pipeline_bubble_closed_form)},
    {"pipeline.time_stage", "", integer, "stage",
     "the stage whose time the breakdown shows (longest compute)", PODSIM_NUMBER(r.time_stage)},
    {"pipeline.memory_stage", "", integer, "stage", "the stage whose memory the report shows (highest peak)",
     PODSIM_NUMBER(r.memory_stage)},
    {"pipeline.stage_peak_bytes", "", list, "", "peak HBM per chip of each stage, in stage order"},
    {"recompile_every_step", "", boolean, "",
     "the step recompiles every time (its compile time is host time)", PODSIM_NUMBER(r.recompile_every_step)},
    {"breakdown_s.compute", "compute_s", real, "s", "step time computing", PODSIM_NUMBER(r.compute_s)},
    {"breakdown_s.exposed_communication", "exposed_communication_s", real, "s",
     "step time in collectives not hidden under compute", PODSIM_NUMBER(r.exposed_communication_s)},
    {"breakdown_s.host", "host_s", real, "s", "step time when only the host works (devices wait)",
     PODSIM_NUMBER(r.host_s)},
    {"breakdown_s.pipeline_bubble", "pipeline_bubble_s", real, "s",
     "step time the reported pipeline stage waits for another stage (0 without pipeline stages)",
     PODSIM_NUMBER(r.pipeline_bubble_s)},
    {"breakdown_s.idle", "idle_s", real, "s", "step time with nothing running (other dependencies)",
     PODSIM_NUMBER(r.idle_s)},
    {"communication_s.total", "communication_s", real, "s", "time any collective runs (their union)",
     PODSIM_NUMBER(r.communication_s)},
    {"communication_s.overlapped", "", real, "s", "collective time hidden under compute",
     PODSIM_NUMBER(r.overlapped_communication_s)},
    {"communication_s.exposed", "", real, "s",
     "collective time not hidden (= breakdown_s.exposed_communication)",
     PODSIM_NUMBER(r.exposed_communication_s)},
    {"phase_s.forward", "", real, "s", "compute time of the forward pass", PODSIM_NUMBER(r.forward_s)},
    {"phase_s.backward", "", real, "s", "compute time of the backward pass", PODSIM_NUMBER(r.backward_s)},
    {"phase_s.recompute", "", real, "s", "compute time recomputing activations (remat)",
     PODSIM_NUMBER(r.recompute_s)},
    {"phase_s.optimizer", "", real, "s", "compute time of the optimizer update",
     PODSIM_NUMBER(r.optimizer_s)},
    {"op_stats", "", list, "",
     "per op category: {category, count, time_s, fraction of device-op time} (host time has no share)"},
    {"matmul_shapes", "", list, "",
     "matmul time by shape class: {shape: small|medium|large, count, time_s, fraction of matmul time}"},
    {"resources", "", list, "",
     "per resource (compute, each ICI axis, DCN, host): {name, busy_s, utilization}"},
    {"simulation.ops", "", integer, "ops", "ops simulated", PODSIM_NUMBER(r.ops)},
    {"simulation.events", "", integer, "events", "events of the discrete-event simulation",
     PODSIM_NUMBER(r.events)},
};

#undef PODSIM_NUMBER
#undef PODSIM_TEXT

}  // namespace

std::span<const ReportField> report_fields() {
    return kFields;
}

std::span<const ReportField* const> sweep_fields() {
    static const std::vector<const ReportField*> fields = [] {
        std::vector<const ReportField*> out;
        for (const auto& f : kFields)
            if (f.in_sweep()) out.push_back(&f);
        return out;
    }();
    return fields;
}

const ReportField* find_field(std::string_view name) {
    for (const auto& f : kFields)
        if (f.path == name || (!f.column.empty() && f.column == name)) return &f;
    return nullptr;
}

std::optional<std::size_t> sweep_column(std::string_view name) {
    auto fields = sweep_fields();
    for (std::size_t i = 0; i < fields.size(); ++i)
        if (fields[i]->column == name || fields[i]->path == name) return i;
    return std::nullopt;
}

const std::vector<std::string>& expression_names() {
    static const std::vector<std::string> names = [] {
        std::vector<std::string> out;
        for (const auto* f : sweep_fields())
            if (f->numeric()) out.emplace_back(f->name());
        for (const auto* f : sweep_fields())
            if (f->numeric() && f->path != f->name()) out.emplace_back(f->path);
        return out;
    }();
    return names;
}

std::string_view type_name(FieldType type) {
    switch (type) {
        case integer:
            return "integer";
        case real:
            return "real";
        case boolean:
            return "bool";
        case text:
            return "string";
        case list:
            return "list";
    }
    return "";
}

namespace {

std::string unit_text(const ReportField& f) {
    return f.unit.empty() ? std::string() : fmt::format(" [{}]", f.unit);
}

}  // namespace

std::string explain_report() {
    std::string out =
        "podsim.report/v1 — `podsim run --format json`, podsim.run() in Python, report_json() in C++\n\n"
        "Every number is plain SI (seconds, bytes, FLOPs); null means the report does not know the value.\n"
        "Nested fields are written path by path: memory.peak_bytes is \"memory\": {\"peak_bytes\": ...}.\n\n";
    out += fmt::format("  {:<34} {}\n", "schema", "string  \"podsim.report/v1\"");
    for (const auto& f : kFields) {
        out += fmt::format("  {:<34} {}{}{}\n", f.path, type_name(f.type), unit_text(f),
                           f.in_sweep() ? fmt::format("  (sweep column {})", f.name()) : std::string());
        out += fmt::format("  {:<34} {}\n", "", f.meaning);
    }
    return out;
}

std::string explain_sweep() {
    std::string out =
        "sweep rows — results.csv and results.jsonl of `podsim sweep --out DIR`, the rows of podsim.sweep() "
        "in "
        "Python\n\n"
        "One row per config, in index order:\n";
    auto line = [&](std::string_view name, std::string_view type, std::string_view meaning) {
        out += fmt::format("  {:<26} {:<16} {}\n", name, type, meaning);
    };
    line("index", "integer", "the config's position in the sweep (first axis slowest)");
    line("status", "string", "ok (simulated) or skipped (an invalid combination)");
    line("reason", "string", "why it was skipped (JSONL: only on skipped rows)");
    line("<axis path>", "string",
         "each swept value as flow YAML, one column per axis (JSONL: in \"parameters\")");
    for (const auto* f : sweep_fields()) {
        line(f->name(), fmt::format("{}{}", type_name(f->type), unit_text(*f)), f->meaning);
        if (f->path != f->name()) line("", "", fmt::format("(report field {})", f->path));
    }
    line("kept", "bool", "passed every keep filter");
    out +=
        "\nSkipped rows leave the report columns empty (JSONL: absent). Integers are written as integers;\n"
        "null (CSV: empty) means the value is unknown, e.g. host_fits without the topology's host memory.\n"
        "\n`keep:` expressions and the `sort:` key name these numeric columns (or their report paths, such "
        "as\n"
        "memory.peak_bytes); booleans are 1 or 0, numbers may carry a size or time unit (peak_bytes < 30 "
        "GiB),\n"
        "and an unknown value is false and fails every comparison. `podsim explain report` lists the whole "
        "report.\n";
    return out;
}

}  // namespace podsim::report
