#include "profile/compare.hpp"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <nlohmann/json.hpp>

#include "core/quantity.hpp"

namespace podsim::profile {
namespace {

// A row, or nothing when neither side has time. Below a nanosecond is rounding in the profile's
// timestamps, not time.
std::optional<CategoryComparison> make_row(const std::string& category, double predicted_s,
                                           double measured_s) {
    constexpr double kNegligible_s = 1e-9;
    CategoryComparison row;
    row.category = category;
    row.predicted_s = predicted_s;
    row.measured_s = measured_s < kNegligible_s ? 0.0 : measured_s;
    if (row.predicted_s < kNegligible_s && row.measured_s == 0.0) return std::nullopt;
    row.difference_s = row.predicted_s - row.measured_s;
    row.error = row.measured_s > 0 ? row.difference_s / row.measured_s : 0.0;
    return row;
}

}  // namespace

Comparison compare(const report::RunReport& predicted, const MeasuredProfile& measured, int mxu_tile) {
    Comparison c;
    c.name = predicted.name;
    c.profile = measured.file;
    c.format = measured.format;
    c.steps = measured.steps;
    c.predicted_step_s = predicted.step_time_s;
    c.measured_step_s = measured.step_time_s;
    c.notes = measured.notes;
    const bool tpu_config = predicted.topology.find("tpu") != std::string::npos;
    if (measured.xla_memory && measured.device == "gpu" && tpu_config) {
        c.notes.push_back(fmt::format(
            "a GPU module compared with a prediction for {}: XLA reserves memory per device alike, but GPU "
            "temporaries (library workspaces) and TPU layout padding differ",
            predicted.topology));
    } else if (measured.device == "gpu" && tpu_config) {
        c.notes.push_back(fmt::format(
            "warning: a GPU profile ({}) compared with a prediction for {}: categories are matched by op "
            "name only, and the times are of different hardware",
            measured.format, predicted.topology));
    } else if (measured.device == "tpu" && !tpu_config && !predicted.topology.empty()) {
        c.notes.push_back(fmt::format("warning: a TPU profile ({}) compared with a prediction for {}",
                                      measured.format, predicted.topology));
    }
    if (measured.format == "pt-xla-debug")
        c.notes.push_back(
            "a PT_XLA_DEBUG log holds counts, not times: give the config a whole_run: block to "
            "compare them with a whole run");
    std::map<std::string, double> pred;
    for (const auto& s : predicted.op_stats) {
        if (s.category != "host") pred[s.category] = s.time_s;
    }
    pred["host"] = predicted.host_s;
    if (measured.format == "pytorch-xla-metrics") {
        // ExecuteTime times the device's executions; CompileTime the compilations. With
        // recompile_every_step the predicted host time holds a compilation: compare it as one.
        const double compile_in_host = predicted.recompile_every_step ? predicted.compile_time_s : 0.0;
        c.step_label = "execution";
        c.predicted_step_s = predicted.step_time_s - predicted.host_s;
        pred["host"] = predicted.host_s - compile_in_host;
        pred["compile"] = predicted.recompile_every_step
                              ? predicted.compile_time_s
                              : predicted.compile_time_s / std::max(1, measured.steps);
    }
    // A profile of something else (another model, mesh or kind of step): a category that is a large
    // part of one side's step and absent from the other's says so, whatever the times.
    {
        constexpr double kLargePart = 0.10;
        static const char* kTelling[] = {"matmul",     "all-gather", "reduce-scatter",
                                         "all-reduce", "all-to-all", "collective-permute"};
        double predicted_total = 0.0, measured_total = 0.0;
        for (const auto& [k, v] : pred) predicted_total += v;
        for (const auto& [k, v] : measured.category_s) measured_total += v;
        const bool has_categories = std::any_of(std::begin(kTelling), std::end(kTelling), [&](const char* k) {
            return measured.category_s.count(k) > 0 || measured.category_s.count("fusion") > 0;
        });
        std::vector<std::string> differs;
        for (const char* k : kTelling) {
            if (!has_categories || predicted_total <= 0 || measured_total <= 0) break;
            const double p = pred.count(k) ? pred.at(k) : 0.0;
            auto it = measured.category_s.find(k);
            const double m = it != measured.category_s.end() ? it->second : 0.0;
            if (p >= kLargePart * predicted_total && m <= 0)
                differs.push_back(
                    fmt::format("{} is {:.0f}% of the predicted step but absent from the profile", k,
                                100 * p / predicted_total));
            if (m >= kLargePart * measured_total && p <= 0)
                differs.push_back(fmt::format("{} is {:.0f}% of the profile's step but the config has none",
                                              k, 100 * m / measured_total));
        }
        if (!differs.empty())
            c.notes.push_back(
                fmt::format("warning: the profile does not look like a run of this config: {}. Check that it "
                            "was measured "
                            "with the config's model, batch, mesh and slice",
                            fmt::join(differs, "; ")));
    }
    std::set<std::string> categories;
    // A compiled module has memory and no times: nothing to hold the categories against.
    if (measured.xla_memory && measured.category_s.empty()) pred.clear();
    for (const auto& [k, v] : pred) categories.insert(k);
    for (const auto& [k, v] : measured.category_s) categories.insert(k);
    for (const auto& k : categories) {
        auto it = measured.category_s.find(k);
        if (auto row = make_row(k, pred.count(k) ? pred[k] : 0.0,
                                it != measured.category_s.end() ? it->second : 0.0))
            c.categories.push_back(*row);
    }
    std::sort(c.categories.begin(), c.categories.end(), [](const auto& a, const auto& b) {
        return std::fabs(a.difference_s) > std::fabs(b.difference_s);
    });
    if (auto measured_shapes = matmul_time_by_shape(measured, mxu_tile)) {
        for (const char* shape : {"large", "medium", "small"}) {
            double predicted_s = 0.0;
            for (const auto& s : predicted.matmul_shapes) {
                if (s.category == shape) predicted_s = s.time_s;
            }
            auto it = measured_shapes->find(shape);
            if (auto row = make_row(shape, predicted_s, it != measured_shapes->end() ? it->second : 0.0))
                c.matmul_shapes.push_back(*row);
        }
    }
    if (measured.xla_memory) {
        c.has_memory = true;
        c.predicted_peak_bytes = predicted.memory.peak_bytes;
        c.measured_peak_bytes = measured.xla_memory->peak();
        c.predicted_host_offload_bytes = predicted.memory.host_offload_bytes;
        c.measured_host_temp_bytes = measured.xla_memory->host_temp_bytes;
        c.predicted_limit_bytes = predicted.memory.capacity_bytes;
        c.measured_limit_bytes = measured.xla_memory->bytes_limit;
        c.predicted_fits = predicted.memory.fits;
        c.measured_ran = measured.xla_memory->ran;
        c.predicted_state_bytes = predicted.memory.params_bytes + predicted.memory.optimizer_bytes;
        c.measured_parameter_bytes = measured.xla_memory->parameter_bytes;
        c.measured_temp_bytes = measured.xla_memory->temp_bytes;
    }
    c.largest_measured.assign(
        measured.ops.begin(),
        measured.ops.begin() + std::min<std::ptrdiff_t>(8, static_cast<std::ptrdiff_t>(measured.ops.size())));
    return c;
}

std::string format_comparison(const Comparison& c) {
    using core::format_seconds;
    std::string out = fmt::format("podsim validate: {} against {} ({}, {} step{})\n\n", c.name, c.profile,
                                  c.format, c.steps, c.steps == 1 ? "" : "s");
    auto error_text = [](double predicted, double measured) {
        return measured > 0 ? fmt::format("{:+.1f}%", 100.0 * (predicted - measured) / measured)
                            : std::string("-");
    };
    out += fmt::format("  {:<20} {:>12} {:>12} {:>12} {:>9}\n", "per step", "predicted", "measured",
                       "difference", "error");
    out += fmt::format(
        "  {:<20} {:>12} {:>12} {:>12} {:>9}\n", c.step_label, format_seconds(c.predicted_step_s),
        c.measured_step_s > 0 ? format_seconds(c.measured_step_s) : std::string("-"),
        c.measured_step_s > 0 ? format_seconds(c.predicted_step_s - c.measured_step_s) : std::string("-"),
        error_text(c.predicted_step_s, c.measured_step_s));
    if (!c.categories.empty()) out += "  by op category, largest difference first\n";
    for (const auto& r : c.categories) {
        out += fmt::format("  {:<20} {:>12} {:>12} {:>12} {:>9}\n", r.category, format_seconds(r.predicted_s),
                           format_seconds(r.measured_s), format_seconds(r.difference_s),
                           error_text(r.predicted_s, r.measured_s));
    }
    if (!c.matmul_shapes.empty()) {
        out += "  matmul by shape class (narrowest dimension)\n";
        for (const auto& r : c.matmul_shapes) {
            out += fmt::format("    {:<18} {:>12} {:>12} {:>12} {:>9}\n", r.category + " shapes",
                               format_seconds(r.predicted_s), format_seconds(r.measured_s),
                               format_seconds(r.difference_s), error_text(r.predicted_s, r.measured_s));
        }
    }
    if (c.has_memory) {
        auto bytes = [](double b) { return core::format_bytes(b); };
        out += c.format == "xla-memory-analysis" ? "\n  memory per device (XLA's memory_analysis())\n"
                                                 : "\n  memory per device (XLA buffer assignment)\n";
        out +=
            fmt::format("  {:<20} {:>12} {:>12} {:>12} {:>9}\n", "peak", bytes(c.predicted_peak_bytes),
                        bytes(c.measured_peak_bytes), bytes(c.predicted_peak_bytes - c.measured_peak_bytes),
                        error_text(c.predicted_peak_bytes, c.measured_peak_bytes));
        out += fmt::format("  {:<20} {:>12} {:>12} {:>12} {:>9}\n", "params + optimizer",
                           bytes(c.predicted_state_bytes), bytes(c.measured_parameter_bytes),
                           bytes(c.predicted_state_bytes - c.measured_parameter_bytes),
                           error_text(c.predicted_state_bytes, c.measured_parameter_bytes));
        out += fmt::format("  {:<20} {:>12} {:>12}\n", "the rest",
                           bytes(c.predicted_peak_bytes - c.predicted_state_bytes),
                           bytes(c.measured_peak_bytes - c.measured_parameter_bytes));
        if (c.predicted_host_offload_bytes > 0 || c.measured_host_temp_bytes > 0) {
            out += fmt::format("  {:<20} {:>12} {:>12}\n", "offloaded to host",
                               bytes(c.predicted_host_offload_bytes), bytes(c.measured_host_temp_bytes));
        }
        if (c.measured_ran) {
            out += fmt::format("  {:<20} {:>12} {:>12}\n", "verdict",
                               c.predicted_fits ? std::string("fits") : std::string("oom"),
                               *c.measured_ran ? std::string("ran") : std::string("oom"));
            if (c.measured_limit_bytes > 0)
                out += fmt::format("  {:<20} {:>12} {:>12}\n", "granted", bytes(c.predicted_limit_bytes),
                                   bytes(c.measured_limit_bytes));
        }
    }
    if (!c.largest_measured.empty()) {
        out += "\n  largest measured ops (whole profile)\n";
        for (const auto& op : c.largest_measured) {
            std::string name = op.name.size() > 60 ? op.name.substr(0, 57) + "..." : op.name;
            out += fmt::format("  {:<60} {:<16} {:>7}x {:>12}\n", name, op.category, op.occurrences,
                               format_seconds(op.total_s));
        }
    }
    for (const auto& note : c.notes) out += "\n  note: " + note + "\n";
    return out;
}

std::string comparison_json(const Comparison& c) {
    nlohmann::ordered_json j;
    j["schema"] = "podsim.validation-report/v1";
    j["name"] = c.name;
    j["profile"] = c.profile;
    j["format"] = c.format;
    j["steps"] = c.steps;
    j["step_compared"] = c.step_label;
    j["predicted_step_time_s"] = c.predicted_step_s;
    j["measured_step_time_s"] = c.measured_step_s;
    auto rows = [](const std::vector<CategoryComparison>& list, const char* key) {
        auto out = nlohmann::ordered_json::array();
        for (const auto& r : list) {
            out.push_back({{key, r.category},
                           {"predicted_s", r.predicted_s},
                           {"measured_s", r.measured_s},
                           {"difference_s", r.difference_s},
                           {"error", r.error}});
        }
        return out;
    };
    j["categories"] = rows(c.categories, "category");
    j["matmul_shapes"] = rows(c.matmul_shapes, "shape");
    if (c.has_memory) {
        j["memory"] = {{"predicted_peak_bytes", c.predicted_peak_bytes},
                       {"xla_peak_bytes", c.measured_peak_bytes},
                       {"predicted_params_and_optimizer_bytes", c.predicted_state_bytes},
                       {"xla_parameter_bytes", c.measured_parameter_bytes},
                       {"xla_temp_bytes", c.measured_temp_bytes},
                       {"predicted_host_offload_bytes", c.predicted_host_offload_bytes},
                       {"xla_host_temp_bytes", c.measured_host_temp_bytes},
                       {"predicted_fits", c.predicted_fits}};
        if (c.measured_ran) j["memory"]["xla_ran"] = *c.measured_ran;
        if (c.measured_limit_bytes > 0) j["memory"]["xla_bytes_limit"] = c.measured_limit_bytes;
    }
    j["notes"] = c.notes;
    // Names and ids come from user files: invalid UTF-8 becomes U+FFFD rather than an exception.
    return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

}  // namespace podsim::profile
