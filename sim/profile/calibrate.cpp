#include "profile/calibrate.hpp"

#include <cmath>
#include <optional>

#include <fmt/format.h>
#include <Eigen/Dense>

#include "core/diagnostics.hpp"
#include "profile/measured_profile.hpp"
#include "profile/whole_run_suite.hpp"
#include "run/simulate.hpp"

namespace podsim::profile {
namespace {

const cost::CalibrationParameter& parameter(const std::string& name) {
    const auto* p = cost::find_calibration_parameter(name);
    if (!p) {
        core::Diagnostics d;
        d.error({"podsim calibrate", 0, 0}, "--params", fmt::format("unknown parameter '{}'", name));
        throw core::UserError(d);
    }
    return *p;
}

double predicted(const report::RunReport& r, const Target& t) {
    switch (t.kind) {
        case Target::Kind::step_time:
            return r.step_time_s;
        case Target::Kind::execution_time:
            return r.step_time_s - r.host_s;
        case Target::Kind::whole_run:
            return 0.0;  // residuals() asks the whole run
        case Target::Kind::all_reduce_fraction:
        case Target::Kind::category_time:
            // A profile's host time is all time with no device op running: host and idle.
            if (t.category == "host")
                return r.host_s + r.idle_s - (r.recompile_every_step ? r.compile_time_s : 0.0);
            if (t.category == "compile") return r.compile_time_s;
            if (t.category.rfind("matmul:", 0) == 0) {
                for (const auto& s : r.matmul_shapes) {
                    if ("matmul:" + s.category == t.category) return s.time_s;
                }
                return 0.0;
            }
            for (const auto& s : r.op_stats) {
                if (s.category == (t.kind == Target::Kind::all_reduce_fraction ? "all-reduce" : t.category)) {
                    return t.kind == Target::Kind::all_reduce_fraction ? s.fraction : s.time_s;
                }
            }
            return 0.0;
    }
    return 0.0;
}

// Relative residuals of every target of every case under `calibration`.
std::vector<double> residuals(const std::vector<CalibrationCase>& cases,
                              const cost::Calibration& calibration) {
    std::vector<double> out;
    for (const auto& c : cases) {
        run::RunSpec spec = c.spec;
        spec.calibration = calibration;
        // A parameter the case sets itself is part of what was measured: it stays the case's.
        static const cost::Calibration defaults = cost::Calibration::defaults();
        for (const auto& p : cost::calibration_parameters()) {
            if (c.spec.calibration.*(p.field) != defaults.*(p.field))
                spec.calibration.*(p.field) = c.spec.calibration.*(p.field);
        }
        auto report = run::simulate(spec).report;
        std::optional<training_run::WholeRun> whole;
        for (const auto& t : c.targets) {
            double p = predicted(report, t);
            if (t.kind == Target::Kind::whole_run && spec.whole_run) {
                if (!whole) whole = training_run::simulate_whole_run(spec, *spec.whole_run);
                p = whole_run_quantity(*whole, t.category).value_or(0.0);
            }
            out.push_back((p - t.measured) / t.measured);
        }
    }
    return out;
}

double rms(const std::vector<double>& r) {
    if (r.empty()) return 0.0;
    double s = 0.0;
    for (double x : r) s += x * x;
    return std::sqrt(s / static_cast<double>(r.size()));
}

struct Fit {
    cost::Calibration calibration;
    std::vector<std::string> fitted, insensitive;
    int iterations = 0;
};

Fit fit(const std::vector<CalibrationCase>& cases, const std::vector<std::string>& names,
        cost::Calibration start) {
    Fit result;
    std::vector<const cost::CalibrationParameter*> params;
    for (const auto& n : names) params.push_back(&parameter(n));
    const std::size_t n = params.size();
    // Normalised coordinates u in [0, 1] between each parameter's bounds.
    auto to_calibration = [&](const Eigen::VectorXd& u) {
        cost::Calibration c = start;
        for (std::size_t i = 0; i < n; ++i) {
            const auto& p = *params[i];
            c.*(p.field) = p.lower_bound + std::clamp(u[static_cast<Eigen::Index>(i)], 0.0, 1.0) *
                                               (p.upper_bound - p.lower_bound);
        }
        return c;
    };
    Eigen::VectorXd u(static_cast<Eigen::Index>(n));
    for (std::size_t i = 0; i < n; ++i) {
        const auto& p = *params[i];
        u[static_cast<Eigen::Index>(i)] =
            (start.*(p.field) - p.lower_bound) / (p.upper_bound - p.lower_bound);
    }
    auto r = residuals(cases, to_calibration(u));
    const auto m = static_cast<Eigen::Index>(r.size());
    Eigen::VectorXd res = Eigen::Map<Eigen::VectorXd>(r.data(), m);
    double cost = res.squaredNorm();
    double lambda = 1e-3;
    std::vector<bool> active(n, true);
    // The roofline has kinks: a parameter can have no effect at the start (say a matmul efficiency
    // while those matmuls are memory-bound) and matter elsewhere in its range. Such a parameter gets
    // a coarse scan over its range first; only one that changes nothing anywhere is left alone.
    constexpr int kScanPoints = 8;
    for (std::size_t i = 0; i < n; ++i) {
        const auto index = static_cast<Eigen::Index>(i);
        Eigen::VectorXd v = u;
        v[index] = std::clamp(u[index] + (u[index] + 1e-4 > 1.0 ? -1e-4 : 1e-4), 0.0, 1.0);
        auto rv = residuals(cases, to_calibration(v));
        if ((Eigen::Map<Eigen::VectorXd>(rv.data(), m) - res).norm() > 1e-12) continue;
        bool sensitive = false;
        for (int point = 0; point <= kScanPoints; ++point) {
            v[index] = static_cast<double>(point) / kScanPoints;
            auto rs = residuals(cases, to_calibration(v));
            Eigen::VectorXd scanned = Eigen::Map<Eigen::VectorXd>(rs.data(), m);
            if ((scanned - res).norm() > 1e-12) sensitive = true;
            if (scanned.squaredNorm() < cost) {
                u[index] = v[index];
                res = scanned;
                cost = scanned.squaredNorm();
            }
        }
        if (!sensitive) active[i] = false;
    }
    for (int iteration = 0; iteration < 60; ++iteration) {
        result.iterations = iteration + 1;
        // Forward differences, stepping inwards at a bound.
        Eigen::MatrixXd J(m, static_cast<Eigen::Index>(n));
        for (std::size_t i = 0; i < n; ++i) {
            Eigen::VectorXd v = u;
            double h = 1e-4;
            if (v[static_cast<Eigen::Index>(i)] + h > 1.0) h = -h;
            v[static_cast<Eigen::Index>(i)] += h;
            auto rv = residuals(cases, to_calibration(v));
            J.col(static_cast<Eigen::Index>(i)) = (Eigen::Map<Eigen::VectorXd>(rv.data(), m) - res) / h;
        }
        for (std::size_t i = 0; i < n; ++i) {
            if (!active[i]) J.col(static_cast<Eigen::Index>(i)).setZero();
        }
        Eigen::MatrixXd A = J.transpose() * J;
        Eigen::VectorXd g = J.transpose() * res;
        bool improved = false;
        for (int attempt = 0; attempt < 12; ++attempt) {
            Eigen::MatrixXd damped = A;
            for (Eigen::Index i = 0; i < damped.rows(); ++i)
                damped(i, i) += lambda * (A(i, i) + 1e-12) + 1e-12;
            Eigen::VectorXd step = damped.ldlt().solve(-g);
            Eigen::VectorXd candidate = (u + step).cwiseMax(0.0).cwiseMin(1.0);
            auto rc = residuals(cases, to_calibration(candidate));
            Eigen::VectorXd cres = Eigen::Map<Eigen::VectorXd>(rc.data(), m);
            double ccost = cres.squaredNorm();
            if (ccost < cost) {
                bool converged = cost - ccost < 1e-12 * std::max(1.0, cost) || (candidate - u).norm() < 1e-7;
                u = candidate;
                res = cres;
                cost = ccost;
                lambda = std::max(lambda / 3.0, 1e-9);
                improved = true;
                if (converged) iteration = 1000;
                break;
            }
            lambda *= 4.0;
        }
        if (!improved) break;
    }
    result.calibration = to_calibration(u);
    for (std::size_t i = 0; i < n; ++i) (active[i] ? result.fitted : result.insensitive).push_back(names[i]);
    return result;
}

}  // namespace

CalibrationCase case_from_profile(const std::string& id, const run::RunSpec& spec,
                                  const std::string& profile_path) {
    MeasuredProfile measured = read_profile(profile_path);
    CalibrationCase c{id, spec, {}};
    if (spec.whole_run) {
        // A whole run: what the profile times over the run (traces: steps and the time without
        // device work; metrics reports: each metric's mean per sample).
        if (measured.format == "chrome-trace") {
            if (measured.step_time_s > 0)
                c.targets.push_back({Target::Kind::whole_run, "mean_step_s", measured.step_time_s});
            if (auto it = measured.category_s.find("host"); it != measured.category_s.end() && it->second > 0)
                c.targets.push_back({Target::Kind::whole_run, "time_without_device_s", it->second});
        }
        for (const auto& [name, total] : measured.metric_totals_s) {
            auto count = measured.metric_counts.find(name);
            if (count != measured.metric_counts.end() && count->second > 0 && total > 0)
                c.targets.push_back({Target::Kind::whole_run, "mean:" + name, total / count->second});
        }
        return c;
    }
    const bool executions_only = measured.format == "pytorch-xla-metrics";
    if (measured.step_time_s > 0) {
        c.targets.push_back({executions_only ? Target::Kind::execution_time : Target::Kind::step_time, "",
                             measured.step_time_s});
    }
    // Host time between device work (traces), so host_overhead is fitted to it rather than to
    // whatever the step time leaves over.
    if (auto it = measured.category_s.find("host");
        it != measured.category_s.end() && it->second > 1e-3 * measured.step_time_s)
        c.targets.push_back({Target::Kind::category_time, "host", it->second});
    // Compilation per step only when the report says every step compiles: a one-off compile says
    // nothing about the step.
    if (auto it = measured.category_s.find("compile"); executions_only && it != measured.category_s.end() &&
                                                       it->second > 0 && spec.runtime.recompile_every_step)
        c.targets.push_back({Target::Kind::category_time, "compile", it->second});
    // With every matmul's shape known, each shape class is its own target (so shape factors can be
    // fitted); otherwise matmuls count as one category.
    auto shapes = matmul_time_by_shape(measured, spec.topology.chip.mxu_tile);
    if (shapes) {
        for (const auto& [shape, seconds] : *shapes) {
            if (seconds > 0) c.targets.push_back({Target::Kind::category_time, "matmul:" + shape, seconds});
        }
    }
    for (const char* category :
         {"matmul", "fusion", "all-gather", "reduce-scatter", "all-reduce", "all-to-all"}) {
        if (shapes && std::string(category) == "matmul") continue;
        auto it = measured.category_s.find(category);
        if (it != measured.category_s.end() && it->second > 0) {
            c.targets.push_back({Target::Kind::category_time, category, it->second});
        }
    }
    return c;
}

CalibrationResult calibrate(const std::vector<CalibrationCase>& cases,
                            const std::vector<std::string>& parameters, const cost::Calibration& start) {
    CalibrationResult result;
    Fit all = fit(cases, parameters, start);
    result.fitted = all.calibration;
    result.parameters = all.fitted;
    result.insensitive = all.insensitive;
    result.iterations = all.iterations;
    result.rms_before = rms(residuals(cases, start));
    result.rms_after = rms(residuals(cases, result.fitted));
    for (std::size_t i = 0; i < cases.size(); ++i) {
        CaseFit cf;
        cf.id = cases[i].id;
        std::vector<CalibrationCase> one{cases[i]};
        cf.rms_before = rms(residuals(one, start));
        cf.rms_after = rms(residuals(one, result.fitted));
        if (cases.size() > 1) {
            std::vector<CalibrationCase> others;
            for (std::size_t j = 0; j < cases.size(); ++j) {
                if (j != i) others.push_back(cases[j]);
            }
            cf.rms_left_out = rms(residuals(one, fit(others, parameters, start).calibration));
        }
        result.cases.push_back(cf);
    }
    return result;
}

std::string format_calibration(const CalibrationResult& r) {
    std::string out =
        fmt::format("podsim calibrate: {} case(s), {} iteration(s)\n\n", r.cases.size(), r.iterations);
    out += fmt::format("  {:<28} {:>14} {:>14}\n", "parameter", "default", "fitted");
    cost::Calibration defaults = cost::Calibration::defaults();
    for (const auto& name : r.parameters) {
        const auto* p = cost::find_calibration_parameter(name);
        auto show = [&](double v) {
            return p->unit == cost::ParameterUnit::time ? fmt::format("{:.4g} s", v)
                                                        : fmt::format("{:.4f}", v);
        };
        out += fmt::format("  {:<28} {:>14} {:>14}\n", name, show(defaults.*(p->field)),
                           show(r.fitted.*(p->field)));
    }
    for (const auto& name : r.insensitive) {
        out += fmt::format("  {:<28} (no target depends on it: left at its value)\n", name);
    }
    out += fmt::format("\n  rms relative error: {:.1f}% before, {:.1f}% after\n", 100 * r.rms_before,
                       100 * r.rms_after);
    out += fmt::format("\n  {:<32} {:>9} {:>9} {:>13}\n", "case", "before", "after", "left out");
    for (const auto& c : r.cases) {
        out +=
            fmt::format("  {:<32} {:>8.1f}% {:>8.1f}% {:>12}\n", c.id, 100 * c.rms_before, 100 * c.rms_after,
                        r.cases.size() > 1 ? fmt::format("{:.1f}%", 100 * c.rms_left_out) : std::string("-"));
    }
    if (r.cases.size() > 1) {
        out +=
            "\n  'left out': the case's error when the parameters are fitted on the other cases only. A\n"
            "  large gap between 'after' and 'left out' means the fit does not generalise (overfitting).\n";
    }
    return out;
}

std::string calibration_yaml(const CalibrationResult& r, const std::string& source) {
    std::string out = "schema: podsim.calibration/v1\n";
    out += fmt::format("source: \"{}\"\nparameters:\n", source);
    for (const auto& name : r.parameters) {
        const auto* p = cost::find_calibration_parameter(name);
        double v = r.fitted.*(p->field);
        if (p->unit == cost::ParameterUnit::time) {
            out += fmt::format("  {}: {:.6g} us\n", name, v * 1e6);
        } else {
            out += fmt::format("  {}: {:.6g}\n", name, v);
        }
    }
    out += fmt::format(
        "fit:\n  rms_relative_error_before: {:.6g}\n  rms_relative_error_after: {:.6g}\n  cases:\n",
        r.rms_before, r.rms_after);
    for (const auto& c : r.cases) {
        out += fmt::format("    - {{id: \"{}\", before: {:.4g}, after: {:.4g}, left_out: {:.4g}}}\n", c.id,
                           c.rms_before, c.rms_after, c.rms_left_out);
    }
    return out;
}

}  // namespace podsim::profile
