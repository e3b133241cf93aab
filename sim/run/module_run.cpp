#include "run/module_run.hpp"

#include <cmath>
#include <filesystem>
#include <tuple>

#include <fmt/format.h>

#include "config/load.hpp"
#include "core/bounded_file.hpp"
#include "core/diagnostics.hpp"
#include "core/gzip.hpp"
#include "hlo/read_module.hpp"
#include "workload/training_keys.hpp"

namespace podsim::run {
namespace {

namespace fs = std::filesystem;

[[noreturn]] void request_error(const std::string& where, std::string message) {
    core::Diagnostics d;
    d.error({where, 0, 0}, "", std::move(message));
    throw core::UserError(d);
}

// topologies/calibration/NAME.yaml beside the topology file, or in the data roots for a bare name:
// the file, and how reports name it (relative to the data root).
std::pair<std::string, std::string> topology_calibration(const std::string& topology) {
    std::error_code ec;
    if (topology.find('/') != std::string::npos || topology.ends_with(".yaml")) {
        const fs::path p = fs::path(topology).parent_path() / "calibration" / fs::path(topology).filename();
        if (fs::is_regular_file(p, ec)) return {p.string(), p.string()};
        return {};
    }
    for (const auto& root : config::data_roots(fs::current_path())) {
        const fs::path relative = fs::path("topologies") / "calibration" / (topology + ".yaml");
        if (fs::is_regular_file(root / relative, ec)) return {(root / relative).string(), relative.string()};
    }
    return {};
}

std::string stem_of(const std::string& path) {
    std::string name = fs::path(path).filename().string();
    for (const char* suffix : {".gz", ".txt", ".pb", ".hlo", ".after_optimizations"}) {
        if (name.size() > std::string_view(suffix).size() && name.ends_with(suffix))
            name.resize(name.size() - std::string_view(suffix).size());
    }
    return name;
}

// The batch and sequence of a one-device module's token input: its only rank-2 integer argument.
std::optional<std::pair<long, long>> token_input(const hlo::Module& module) {
    std::optional<std::pair<long, long>> found;
    const hlo::Computation& entry = module.entry_computation();
    for (int p : entry.parameters) {
        const hlo::Shape& s = entry.instructions[static_cast<std::size_t>(p)].shape;
        const bool integer = s.type == hlo::ElementType::s32 || s.type == hlo::ElementType::s64 ||
                             s.type == hlo::ElementType::u32 || s.type == hlo::ElementType::u64;
        if (!integer || s.dims.size() != 2) continue;
        if (found) return std::nullopt;  // two candidates: cannot tell
        found = std::pair{static_cast<long>(s.dims[0]), static_cast<long>(s.dims[1])};
    }
    return found;
}

}  // namespace

bool is_module_file(const std::string& path) {
    core::FileBytes file = core::read_regular_file(path, std::uint64_t{1} << 30);
    if (!file.error.empty()) return false;
    // Its opening tells: HLO text starts `HloModule` (after comments), a proto has its name.
    if (core::is_gzip(file.bytes)) file = core::gunzip_prefix(file.bytes, 1 << 16);
    return file.error.empty() && hlo::is_hlo_module(path, file.bytes);
}

ModuleRun run_module(const ModuleRunRequest& request, SimulateOptions options) {
    hlo::Module module = request.bytes.empty() ? hlo::read_module_file(request.path)
                                               : hlo::read_module(request.path, request.bytes);
    ModuleRun out;
    out.module_name = module.name;
    out.format = module.format;
    ProgramSpec& spec = out.spec;
    spec.name = stem_of(request.path);
    spec.source = request.path;
    spec.topology = config::load_topology(request.topology);
    auto slice = hardware::parse_slice_shape(request.slice);
    if (!slice)
        request_error("--slice",
                      fmt::format("'{}' is not a slice shape such as 1, 2x2x1 or 4x4x4", request.slice));
    if (auto why = hardware::slice_shape_error(spec.topology, *slice)) request_error("--slice", *why);
    spec.slice = hardware::normalized_slice(spec.topology, *slice);
    std::string why;
    auto order = hlo::parse_device_order(request.device_order, why);
    if (!order) request_error("--device-order", why);

    std::string calibration_path = request.calibration;
    out.calibration_file = request.calibration;
    if (request.calibration.empty())
        std::tie(calibration_path, out.calibration_file) = topology_calibration(request.topology);
    if (!calibration_path.empty()) spec.calibration = config::load_calibration_file(calibration_path);

    out.lowered = hlo::lower_module(module, hlo::LowerOptions{spec.topology, spec.slice, *order});
    spec.mesh = out.lowered.mesh;
    // XLA schedules the module's collectives itself: the program's dependencies say which wait.
    spec.runtime.framework = parallel::Framework::jax;
    spec.runtime.async_collectives = true;
    spec.compiled_ops = out.lowered.compiled_kernels;

    // The batch and sequence as a run config bounds them (a seq_len beyond int was cut to it).
    auto check_size = [](const char* option, const core::Key& key, long value, const std::string& what) {
        if (auto bound = key.bounds_error(static_cast<double>(value)); !bound.empty())
            request_error(option, what + bound);
    };
    if (request.global_batch != 0)
        check_size("--global-batch", workload::training_key("training.global_batch"), request.global_batch,
                   "");
    if (request.seq_len != 0)
        check_size("--seq-len", workload::training_key("training.seq_len"), request.seq_len, "");
    if (request.model.empty() && (request.global_batch != 0 || request.seq_len != 0))
        request_error(request.global_batch != 0 ? "--global-batch" : "--seq-len",
                      "counts the model FLOPs of --model, which is not given");
    if (!request.model.empty()) {
        spec.model = config::load_model(request.model);
        workload::TrainingSpec training;
        training.global_batch = request.global_batch;
        training.seq_len = static_cast<int>(request.seq_len);
        if (training.global_batch <= 0 || training.seq_len <= 0) {
            auto tokens = module.devices() == 1 ? token_input(module) : std::nullopt;
            if (!tokens)
                request_error("--model",
                              "give --global-batch and --seq-len: the module does not say its batch "
                              "(one device, one rank-2 integer input) for MFU");
            const std::string from_module = "the module's token input gives ";
            if (training.global_batch <= 0) {
                check_size("--global-batch", workload::training_key("training.global_batch"), tokens->first,
                           from_module + "the batch: ");
                training.global_batch = tokens->first;
            }
            if (training.seq_len <= 0) {
                check_size("--seq-len", workload::training_key("training.seq_len"), tokens->second,
                           from_module + "the sequence: ");
                training.seq_len = static_cast<int>(tokens->second);
            }
        }
        spec.training = training;
        spec.mfu_attention = request.mfu_attention;
    }
    if (!(request.model_flops >= 0.0) || !std::isfinite(request.model_flops))
        request_error("--model-flops",
                      fmt::format("must be a finite count from 0, found {}", request.model_flops));
    spec.model_flops_per_step = request.model_flops;

    SimulationCache cache;
    out.simulation = simulate(std::move(out.lowered.program), spec, cache, options);
    out.lowered.program = {};
    out.liveness_peak_bytes = out.simulation.memory.peak_bytes;
    out.memory_source = "liveness";
    if (module.buffer_assignment) {
        // XLA's own peak: what its allocator reserves (peak_memory_in_bytes).
        const hlo::BufferAssignment& a = *module.buffer_assignment;
        memory::MemoryProfile& m = out.simulation.memory;
        m.peak_bytes = a.peak_bytes();
        m.at_peak = memory::MemoryBreakdown{};
        m.at_peak.params = a.parameter_bytes();
        m.at_peak.temporaries = m.peak_bytes - m.at_peak.params;
        m.fits = m.peak_bytes <= m.capacity_bytes;
        m.overflow_bytes = m.fits ? 0.0 : m.peak_bytes - m.capacity_bytes;
        report::MemoryReport& r = out.simulation.report.memory;
        r.peak_bytes = m.peak_bytes;
        r.fits = m.fits;
        r.overflow_bytes = m.overflow_bytes;
        r.params_bytes = m.at_peak.params;
        r.grads_bytes = r.optimizer_bytes = r.activations_bytes = r.gathered_weights_bytes = 0.0;
        r.collective_buffers_bytes = 0.0;
        r.temporaries_bytes = m.at_peak.temporaries;
        out.memory_source = "buffer assignment";
    }
    out.simulation.report.model = spec.model ? spec.model->name : module.name;
    return out;
}

}  // namespace podsim::run
