#include "podsim/podsim.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "config/load.hpp"
#include "config/schema.hpp"
#include "core/csv.hpp"
#include "core/quantity.hpp"
#include "core/suggest.hpp"
#include "report/format.hpp"
#include "report/report_fields.hpp"
#include "training_run/whole_run_format.hpp"

namespace podsim {

namespace fs = std::filesystem;

namespace {

fs::path or_current(const fs::path& dir) {
    return dir.empty() ? fs::current_path() : dir;
}

[[noreturn]] void query_error(const std::string& key, const std::string& message) {
    core::Diagnostics d;
    d.error({"podsim collective", 0, 0}, key, message);
    throw ConfigError(d);
}

}  // namespace

Override parse_override(const std::string& assignment) {
    return config::parse_override(assignment);
}

RunSpec load_run(const std::string& path, const std::vector<Override>& overrides) {
    return config::load_run_file(path, overrides);
}

RunSpec load_run_text(const std::string& yaml_text, const std::vector<Override>& overrides,
                      const std::string& name, const fs::path& base_dir) {
    return config::load_run_text(yaml_text, name, or_current(base_dir), overrides);
}

std::optional<fs::path> default_config_path() {
    return config::default_config_path();
}

Simulation simulate(const RunSpec& spec, SimulateOptions options) {
    run::SimulationCache cache;
    return run::simulate(spec, cache, options);
}

std::string report_json(const RunReport& report) {
    return report::format_json(report);
}

std::string report_table(const RunReport& report) {
    return report::format_table(report);
}

std::string chrome_trace(const RunSpec& spec, const Simulation& simulation) {
    if (simulation.folded_layers > 0)
        throw std::invalid_argument(
            "chrome_trace needs the whole step: simulate without SimulateOptions::fold");
    return report::chrome_trace(spec.name, simulation.program, simulation.timeline, simulation.memory);
}

ModuleRun run_module(const ModuleRunRequest& request, SimulateOptions options) {
    return run::run_module(request, options);
}

bool is_module_file(const std::string& path) {
    return run::is_module_file(path);
}

std::string module_trace(const ModuleRun& run) {
    const Simulation& s = run.simulation;
    return report::chrome_trace(s.report.name, s.program, s.timeline, s.memory);
}

WholeRun simulate_whole_run(const RunSpec& spec) {
    if (!spec.whole_run) {
        core::Diagnostics d;
        d.error({spec.source, 0, 0}, "whole_run", "the config has no whole_run: block (a run of many steps)");
        throw ConfigError(d);
    }
    return training_run::simulate_whole_run(spec, *spec.whole_run);
}

std::string whole_run_json(const WholeRun& run) {
    return training_run::whole_run_json(run);
}

std::string whole_run_trace(const WholeRun& run) {
    return training_run::whole_run_trace(run);
}

CollectiveRequest collective_request(const CollectiveQuery& q) {
    CollectiveRequest request;
    request.topology = config::load_topology(q.topology);
    auto slice = hardware::parse_slice_shape(q.slice);
    if (!slice) query_error("slice", fmt::format("'{}' is not a slice shape such as 4x4x4", q.slice));
    request.slice = hardware::normalized_slice(request.topology, *slice);
    if (!q.mesh.empty()) {
        auto axes = network::parse_axis_list(q.mesh);
        if (!axes)
            query_error("mesh", fmt::format("'{}' is not name=size,... (e.g. fsdp=16,tensor=4)", q.mesh));
        for (std::size_t a = 0; a < axes->size(); ++a)
            for (std::size_t b = 0; b < a; ++b)
                if ((*axes)[a].name == (*axes)[b].name)
                    query_error("mesh", fmt::format("axis '{}' given twice", (*axes)[a].name));
        request.mesh.ici = *axes;
    }
    if (request.mesh.ici.empty())
        request.mesh.ici.push_back(
            {"all", static_cast<int>(hardware::slice_devices(request.topology, request.slice))});
    auto kind = collectives::parse_collective(q.op);
    if (!kind) {
        query_error("op",
                    fmt::format("'{}' is not one of all-gather, reduce-scatter, all-reduce, all-to-all, "
                                "collective-permute",
                                q.op));
    }
    request.kind = *kind;
    request.axes = q.axis.empty() ? std::vector<std::string>{request.mesh.ici.front().name}
                                  : core::split_list(q.axis, ',');
    for (std::size_t i = 0; i < request.axes.size(); ++i) {
        for (std::size_t j = 0; j < i; ++j) {
            if (request.axes[j] == request.axes[i])
                query_error("axis", fmt::format("axis {} given twice: a collective runs over each axis once",
                                                request.axes[i]));
        }
    }
    request.twisted = q.twisted;
    auto bytes = core::parse_quantity(q.bytes, core::Dimension::bytes);
    if (!bytes.ok) query_error("bytes", bytes.error);
    if (bytes.value <= 0) query_error("bytes", "must be positive");
    request.bytes = bytes.value;
    return request;
}

CollectiveResult run_collective(const CollectiveRequest& request) {
    return run::run_collective(request);
}

std::string collective_json(const CollectiveRequest& request, const CollectiveResult& r) {
    nlohmann::ordered_json j;
    j["op"] = collectives::collective_name(request.kind);
    j["bytes"] = request.bytes;
    j["group_size"] = r.group_size;
    j["time_s"] = r.time_s;
    j["closed_form_s"] = r.closed_form_s;
    j["algorithm_bandwidth_bytes_per_s"] = r.algorithm_bandwidth;
    j["bus_bandwidth_bytes_per_s"] = r.bus_bandwidth;
    j["phases"] = r.plan.phases.size();
    auto links = nlohmann::ordered_json::array();
    for (const auto& l : r.links) {
        links.push_back({{"dim", l.dim},
                         {"direction", l.direction},
                         {"links_used", l.links_used},
                         {"max_bytes", l.max_bytes},
                         {"max_utilization", l.max_utilization},
                         {"mean_utilization", l.mean_utilization}});
    }
    j["links"] = std::move(links);
    return j.dump() + "\n";
}

SweepPlan load_sweep(const std::string& path) {
    return SweepPlan::load(path);
}

SweepPlan load_sweep_text(const std::string& yaml_text, const std::string& name, const fs::path& base_dir) {
    return SweepPlan::load_text(yaml_text, name, or_current(base_dir));
}

SweepSummary run_sweep(const SweepPlan& plan, SweepOptions options,
                       const std::function<void(const SweepRow&)>& on_row) {
    if (on_row) options.on_row = on_row;
    return sweep::run_sweep(plan, options);
}

std::vector<ValidationResult> validate_suite(const std::string& directory) {
    auto results = profile::evaluate_suite(config::load_validation_suite(directory));
    // Steps XLA compiled (and ran) itself: memory against its own numbers.
    fs::path xla_dir = fs::path(directory) / "xla";
    if (fs::is_directory(xla_dir)) {
        auto xla = profile::evaluate_suite(config::load_validation_suite(xla_dir.string()));
        results.insert(results.end(), xla.begin(), xla.end());
    }
    fs::path collective_dir = fs::path(directory) / "collectives";
    if (fs::is_directory(collective_dir)) {
        auto collective =
            profile::evaluate_collective_suite(config::load_collective_suite(collective_dir.string()));
        results.insert(results.end(), collective.begin(), collective.end());
    }
    if (results.empty()) {
        // An empty table and exit 0 would read as a suite that passed.
        core::Diagnostics d;
        d.error({directory, 0, 0}, "",
                "no case to validate: no podsim.validation/v1 file (*.yaml) here nor in collectives/");
        throw ConfigError(d);
    }
    return results;
}

std::string validation_json(const std::vector<ValidationResult>& results) {
    return profile::format_suite_json(results);
}

std::string explain(std::string_view what) {
    auto known = explainable();
    if (std::find(known.begin(), known.end(), what) == known.end()) {
        std::string message = fmt::format("cannot explain '{}': one of {}", what, fmt::join(known, ", "));
        if (auto hint = core::closest_match(std::string(what), known))
            message += fmt::format(" (did you mean '{}'?)", *hint);
        core::Diagnostics d;
        d.error({"podsim explain", 0, 0}, "", message);
        throw ConfigError(d);
    }
    if (what == "report") return report::explain_report();
    if (what == "sweep") return report::explain_sweep();
    return config::explain(what);
}

std::vector<std::string> explainable() {
    auto names = config::explainable();
    names.insert(names.end(), {"report", "sweep"});
    return names;
}

}  // namespace podsim
