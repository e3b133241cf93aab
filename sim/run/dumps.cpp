#include "run/dumps.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "core/quantity.hpp"

namespace podsim::run {

std::string dump_mapping(const Simulation& sim) {
    std::string out =
        "mesh axis -> torus dimensions (size, stride, ring or line) and the chips of each group\n";
    // Torus dimensions by letter; the devices of one chip (v2/v3) as "core", last in a coordinate.
    const int intra_chip = sim.torus ? sim.torus->intra_chip_dimension() : -1;
    auto dim_name = [&](int dim) {
        return dim == intra_chip ? std::string("core") : std::string(1, "xyzw"[dim]);
    };
    for (const auto& axis : sim.mapping) {
        out += fmt::format("  {:<8} size {:<5}", axis.axis, axis.size);
        for (const auto& p : axis.parts) {
            out += fmt::format(" {}:{} stride {} {}", dim_name(p.dim), p.size, p.stride,
                               p.wraps ? "ring" : "line");
        }
        out += "\n";
        if (!sim.torus) continue;
        auto groups = sim.torus->groups(axis);
        const std::size_t shown = std::min<std::size_t>(groups.size(), 4);
        for (std::size_t g = 0; g < shown; ++g) {
            std::string members;
            for (int chip : groups[g]) {
                const auto& c = sim.torus->coord_of(chip);
                members += fmt::format(" ({},{},{})", c[0], c[1], c[2]);
            }
            out += fmt::format("    group {}:{}\n", g, members);
        }
        if (groups.size() > shown) out += fmt::format("    ... {} groups in all\n", groups.size());
    }
    return out;
}

std::string dump_opgraph(const Simulation& sim, const RunSpec& spec) {
    // The unsharded step of one microbatch: what the workload module lowered the model to, with its
    // per-sample batch extents scaled to the microbatch's samples.
    const std::int64_t samples = spec.training.global_batch / spec.training.microbatches;
    std::string out = fmt::format("{:>5}  {:<9} {:<7} {:<44} {:>26} {:>12}  inputs\n", "op", "phase", "kind",
                                  "name", "matmul [batch] m x n x k", "FLOPs");
    const auto& g = *sim.graph;
    for (int i : g.topological_order()) {
        const auto& op = g.op(i);
        std::string shape, preds;
        double flops = 0.0;
        if (op.kind == workload::OpKind::matmul) {
            const auto& s = op.matmul;
            auto size = [samples](const workload::Extent& e) { return workload::step_size(e, samples); };
            const std::int64_t batch = size(s.batch[0]) * size(s.batch[1]);
            shape = fmt::format("[{}] {} x {} x {}", batch, size(s.m), size(s.n), size(s.k));
            flops = 2.0 * static_cast<double>(batch) * static_cast<double>(size(s.m)) *
                    static_cast<double>(size(s.n)) * static_cast<double>(size(s.k));
        }
        for (int p : g.predecessors(i)) preds += fmt::format("{} ", p);
        const char* kind = op.kind == workload::OpKind::matmul   ? "matmul"
                           : op.kind == workload::OpKind::fusion ? "fusion"
                                                                 : "update";
        out += fmt::format("{:>5}  {:<9} {:<7} {:<44} {:>26} {:>12.4g}  {}\n", i,
                           workload::phase_name(op.phase), kind, op.name, shape, flops, preds);
    }
    return out;
}

std::string dump_program(const Simulation& sim) {
    std::string out = fmt::format("{:>5}  {:<12} {:<10} {:<44} {:>12} {:>12} {:>10}  deps\n", "op",
                                  "resource", "phase", "name", "flops", "bytes", "time");
    for (std::size_t i = 0; i < sim.program.ops.size(); ++i) {
        const auto& op = sim.program.ops[i];
        std::string deps;
        for (int d : op.deps) deps += fmt::format("{} ", d);
        double bytes = parallel::is_collective(op.category) ? op.collective_bytes : op.bytes;
        out += fmt::format(
            "{:>5}  {:<12} {:<10} {:<44} {:>12.4g} {:>12.4g} {:>10}  {}\n", i,
            sim.program.resources[static_cast<std::size_t>(op.resource)].name, workload::phase_name(op.phase),
            op.name, op.flops, bytes,
            core::format_seconds(core::to_seconds(sim.timeline.spans[i].end - sim.timeline.spans[i].start)),
            deps);
    }
    return out;
}

std::string dump_timeline(const Simulation& sim) {
    std::string out = fmt::format("{:>14} {:>14}  {:<12} {}\n", "start_us", "end_us", "resource", "op");
    std::vector<int> order(sim.program.ops.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
        return sim.timeline.spans[static_cast<std::size_t>(a)].start <
               sim.timeline.spans[static_cast<std::size_t>(b)].start;
    });
    for (int i : order) {
        const auto& s = sim.timeline.spans[static_cast<std::size_t>(i)];
        out += fmt::format("{:>14.3f} {:>14.3f}  {:<12} {}\n", core::to_seconds(s.start) * 1e6,
                           core::to_seconds(s.end) * 1e6,
                           sim.program.resources[static_cast<std::size_t>(s.resource)].name,
                           sim.program.ops[static_cast<std::size_t>(i)].name);
    }
    return out;
}

std::string dump_stage(const RunSpec& spec, const Simulation& sim, std::string_view stage) {
    if (sim.folded_layers > 0)
        throw std::invalid_argument("a dump needs the whole step: simulate without fold");
    if (stage == "opgraph") return dump_opgraph(sim, spec);
    if (stage == "mapping") return dump_mapping(sim);
    if (stage == "program") return dump_program(sim);
    if (stage == "timeline") return dump_timeline(sim);
    throw std::invalid_argument(fmt::format("no dump of stage '{}'", stage));
}

}  // namespace podsim::run
