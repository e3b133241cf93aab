#include <algorithm>

#include <fmt/format.h>

#include "core/diagnostics.hpp"
#include "memory/buffer_profile.hpp"
#include "report/build_report.hpp"
#include "run/simulate.hpp"
#include "scheduler/scheduler.hpp"

namespace podsim::run {

Simulation simulate(parallel::DeviceProgram program, const ProgramSpec& spec, SimulationCache& cache,
                    SimulateOptions options) {
    Simulation sim;
    sim.program = std::move(program);
    cost::CostModel model(
        cost::CostContext{spec.topology, spec.runtime, spec.calibration, spec.compute_dtype});
    sim.costs = model.cost_all(sim.program);
    scheduler::NetworkInput network = plan_network(
        NetworkPlace{spec.topology, spec.slice, spec.twisted_torus, spec.calibration}, sim, cache, options);
    try {
        sim.timeline =
            scheduler::schedule(sim.program, sim.costs, spec.runtime, sim.torus ? &network : nullptr,
                                scheduler::ScheduleOptions{.jump_periods = !options.exact,
                                                           .count_link_bytes = options.link_bytes,
                                                           .reuse_rates = !options.exact,
                                                           .scratch = &cache.schedule_scratch()});
    } catch (const core::TimeOverflow& e) {
        core::Diagnostics d;
        d.error({spec.source, 0, 0}, "",
                fmt::format("cannot simulate this program: {}; one step would last longer than podsim can "
                            "represent",
                            e.what()));
        throw core::UserError(d);
    }
    const double hbm = spec.topology.chip.device_hbm_capacity();
    sim.memory = sim.program.buffers.empty() ? memory::profile_memory(sim.program, sim.timeline, hbm)
                                             : memory::profile_buffers(sim.program, sim.timeline, hbm);

    // The report reads the model and training it is given: none when the program names no model.
    const workload::ModelSpec no_model{};
    const workload::TrainingSpec no_training{};
    const workload::ModelSpec& m = spec.model ? *spec.model : no_model;
    const workload::TrainingSpec& t = spec.training ? *spec.training : no_training;
    memory::HostMemoryInput host_in;
    host_in.params_per_device_bytes = sim.memory.at_peak.params;
    host_in.chips_per_host =
        static_cast<int>(std::min<long>(spec.topology.host.chips_per_host, spec.slice.chips()));
    host_in.devices_per_chip =
        hardware::devices_per_chip_in_use(spec.topology, spec.slice, spec.mesh.ici_size());
    host_in.host_capacity = spec.topology.host.host_memory;
    sim.host_memory = memory::host_memory(host_in);
    const double compile_s = spec.runtime.compile_time.value_or(spec.calibration.compile_time_base +
                                                                spec.calibration.compile_time_per_op *
                                                                    static_cast<double>(spec.compiled_ops));
    sim.report = report::build_report(report::ReportInput{
        spec.name, m, t, spec.runtime, spec.topology, spec.slice, 1, spec.mesh, spec.mfu_attention,
        sim.program, sim.costs, sim.timeline, sim.memory, sim.host_memory, compile_s});
    report::RunReport& r = sim.report;
    if (!spec.model) {
        r.model.clear();
        r.params = 0;
    }
    if (spec.model_flops_per_step > 0.0) {
        r.model_flops_per_step = spec.model_flops_per_step;
        r.mfu_convention = "given";
    } else if (!spec.model || !spec.training) {
        r.model_flops_per_step = 0.0;
        r.mfu_convention = "none";
    }
    const double capacity = r.step_time_s * static_cast<double>(r.chips) * r.peak_flops_per_chip;
    r.mfu = capacity > 0.0 ? r.model_flops_per_step / capacity : 0.0;
    r.prefetch_depth = 0;
    return sim;
}

}  // namespace podsim::run
