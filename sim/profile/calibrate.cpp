#include "profile/calibrate.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <limits>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <Eigen/Dense>

#include "core/diagnostics.hpp"
#include "core/suggest.hpp"
#include "profile/measured_profile.hpp"
#include "profile/whole_run_suite.hpp"
#include "run/simulate.hpp"

namespace podsim::profile {
namespace {

const cost::CalibrationParameter& parameter(const std::string& name) {
    const auto* p = cost::find_calibration_parameter(name);
    if (!p) check_parameter_names({name});
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

// Counts simulations and reports where the fits are; one per calibrate() call.
class Tracker {
  public:
    Tracker(const ProgressCallback& callback, int fits) : callback_(callback) { state_.fits = fits; }

    void simulated(std::size_t n) {
        state_.simulations += static_cast<long>(n);
        report();
    }
    void begin_fit() {
        ++state_.fit;
        state_.iteration = 0;
        fit_start_ = Clock::now();
        report();
    }
    void iteration(int i) {
        state_.iteration = i;
        report();
    }
    void end_fit() { finished_s_ += seconds_since(fit_start_); }

  private:
    using Clock = std::chrono::steady_clock;
    static double seconds_since(Clock::time_point t) {
        return std::chrono::duration<double>(Clock::now() - t).count();
    }
    void report() {
        if (!callback_) return;
        state_.elapsed_s = seconds_since(start_);
        const int done = state_.fit - 1;
        if (done > 0) {
            const double mean = finished_s_ / done;
            state_.eta_s = std::max(0.0, mean * (state_.fits - done) - seconds_since(fit_start_));
        }
        callback_(state_);
    }

    const ProgressCallback& callback_;
    CalibrationProgress state_;
    Clock::time_point start_ = Clock::now();
    Clock::time_point fit_start_ = Clock::now();
    double finished_s_ = 0.0;
};

// Relative residuals of one case's targets under `calibration`.
std::vector<double> case_residuals(const CalibrationCase& c, const cost::Calibration& calibration) {
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
    std::vector<double> out;
    for (const auto& t : c.targets) {
        double p = predicted(report, t);
        if (t.kind == Target::Kind::whole_run && spec.whole_run) {
            if (!whole) whole = training_run::simulate_whole_run(spec, *spec.whole_run);
            p = whole_run_quantity(*whole, t.category).value_or(0.0);
        }
        out.push_back((p - t.measured) / t.measured);
    }
    return out;
}

// Relative residuals of every target of every case under `calibration`, in case order. The cases
// are independent simulations: one thread per hardware thread takes every n-th case (a fit
// evaluates this thousands of times, and `podsim calibrate --suite` spends its time here).
std::vector<double> residuals(const std::vector<CalibrationCase>& cases, const cost::Calibration& calibration,
                              Tracker* tracker = nullptr) {
    std::vector<std::vector<double>> per_case(cases.size());
    const std::size_t threads =
        std::min<std::size_t>(cases.size(), std::max(1u, std::thread::hardware_concurrency()));
    std::vector<std::exception_ptr> failures(threads);
    auto work = [&](std::size_t first) {
        try {
            for (std::size_t i = first; i < cases.size(); i += threads)
                per_case[i] = case_residuals(cases[i], calibration);
        } catch (...) {
            failures[first] = std::current_exception();
        }
    };
    if (threads <= 1) {
        for (std::size_t i = 0; i < cases.size(); ++i) per_case[i] = case_residuals(cases[i], calibration);
    } else {
        std::vector<std::thread> pool;
        for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work, t);
        work(0);
        for (auto& thread : pool) thread.join();
        for (const auto& failure : failures)
            if (failure) std::rethrow_exception(failure);
    }
    std::vector<double> out;
    for (const auto& r : per_case) out.insert(out.end(), r.begin(), r.end());
    if (tracker) tracker->simulated(cases.size());
    return out;
}

double rms(const std::vector<double>& r) {
    if (r.empty()) return 0.0;
    double s = 0.0;
    for (double x : r) s += x * x;
    return std::sqrt(s / static_cast<double>(r.size()));
}

int count_targets(const std::vector<CalibrationCase>& cases) {
    int m = 0;
    for (const auto& c : cases) m += static_cast<int>(c.targets.size());
    return m;
}

std::string target_name(const Target& t) {
    switch (t.kind) {
        case Target::Kind::step_time:
            return "step_time";
        case Target::Kind::execution_time:
            return "execution_time";
        case Target::Kind::all_reduce_fraction:
            return "all_reduce_fraction";
        case Target::Kind::category_time:
        case Target::Kind::whole_run:
            return t.category;
    }
    return t.category;
}

struct Fit {
    cost::Calibration calibration;
    std::vector<std::string> fitted, insensitive;
    int iterations = 0;
    int measurements = 0;
    // More sensitive parameters than measurements: no fit was made; `by_sensitivity` ranks the
    // sensitive parameters by their effect on the measurements, largest first.
    bool underdetermined = false;
    std::vector<std::string> by_sensitivity;
    std::vector<ParameterFit> parameter_fits;  // of `fitted`
};

Fit fit(const std::vector<CalibrationCase>& cases, const std::vector<std::string>& names,
        cost::Calibration start, Tracker& tracker) {
    tracker.begin_fit();
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
    auto r = residuals(cases, to_calibration(u), &tracker);
    const auto m = static_cast<Eigen::Index>(r.size());
    result.measurements = static_cast<int>(m);
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
        auto rv = residuals(cases, to_calibration(v), &tracker);
        if ((Eigen::Map<Eigen::VectorXd>(rv.data(), m) - res).norm() > 1e-12) continue;
        bool sensitive = false;
        for (int point = 0; point <= kScanPoints; ++point) {
            v[index] = static_cast<double>(point) / kScanPoints;
            auto rs = residuals(cases, to_calibration(v), &tracker);
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
    // Forward differences, stepping inwards at a bound; columns of parameters left alone are zero.
    auto jacobian = [&](const Eigen::VectorXd& at, const Eigen::VectorXd& residual) {
        Eigen::MatrixXd J = Eigen::MatrixXd::Zero(m, static_cast<Eigen::Index>(n));
        for (std::size_t i = 0; i < n; ++i) {
            if (!active[i]) continue;
            Eigen::VectorXd v = at;
            double h = 1e-4;
            if (v[static_cast<Eigen::Index>(i)] + h > 1.0) h = -h;
            v[static_cast<Eigen::Index>(i)] += h;
            auto rv = residuals(cases, to_calibration(v), &tracker);
            J.col(static_cast<Eigen::Index>(i)) = (Eigen::Map<Eigen::VectorXd>(rv.data(), m) - residual) / h;
        }
        return J;
    };
    Eigen::MatrixXd J = jacobian(u, res);
    const auto active_count = static_cast<Eigen::Index>(std::count(active.begin(), active.end(), true));
    if (active_count > m) {
        result.underdetermined = true;
        std::vector<std::size_t> order;
        for (std::size_t i = 0; i < n; ++i)
            if (active[i]) order.push_back(i);
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
            return J.col(static_cast<Eigen::Index>(a)).norm() > J.col(static_cast<Eigen::Index>(b)).norm();
        });
        for (std::size_t i : order) result.by_sensitivity.push_back(names[i]);
        tracker.end_fit();
        return result;
    }
    for (int iteration = 0; iteration < 60; ++iteration) {
        result.iterations = iteration + 1;
        tracker.iteration(iteration + 1);
        if (iteration > 0) J = jacobian(u, res);
        Eigen::MatrixXd A = J.transpose() * J;
        Eigen::VectorXd g = J.transpose() * res;
        bool improved = false;
        for (int attempt = 0; attempt < 12; ++attempt) {
            Eigen::MatrixXd damped = A;
            for (Eigen::Index i = 0; i < damped.rows(); ++i)
                damped(i, i) += lambda * (A(i, i) + 1e-12) + 1e-12;
            Eigen::VectorXd step = damped.ldlt().solve(-g);
            Eigen::VectorXd candidate = (u + step).cwiseMax(0.0).cwiseMin(1.0);
            auto rc = residuals(cases, to_calibration(candidate), &tracker);
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

    // Uncertainty at the solution (linearised; e.g. Nocedal & Wright, Numerical Optimization, 10.3):
    // cov(u) = s^2 (J^T J)^+ over the fitted parameters, s^2 = RSS / (m - k). A direction of J's
    // null space is a combination of parameters the measurements cannot see: those are undetermined.
    std::vector<std::size_t> fitted_index;
    for (std::size_t i = 0; i < n; ++i)
        if (active[i]) fitted_index.push_back(i);
    const auto k = static_cast<Eigen::Index>(fitted_index.size());
    Eigen::MatrixXd Ja = jacobian(u, res);
    Eigen::MatrixXd Jk(m, k);
    for (Eigen::Index c = 0; c < k; ++c) Jk.col(c) = Ja.col(static_cast<Eigen::Index>(fitted_index[c]));
    std::vector<bool> determined(static_cast<std::size_t>(k), true);
    Eigen::VectorXd variance = Eigen::VectorXd::Constant(k, std::numeric_limits<double>::quiet_NaN());
    if (k > 0) {
        Eigen::JacobiSVD<Eigen::MatrixXd> svd(Jk, Eigen::ComputeFullV);
        const Eigen::VectorXd& sigma = svd.singularValues();
        const double threshold = std::max(sigma.size() > 0 ? sigma[0] : 0.0, 1e-300) * 1e-6;
        Eigen::Index rank = 0;
        while (rank < sigma.size() && sigma[rank] > threshold) ++rank;
        const Eigen::MatrixXd& V = svd.matrixV();
        for (Eigen::Index c = rank; c < k; ++c) {
            for (Eigen::Index i = 0; i < k; ++i)
                if (std::abs(V(i, c)) > 0.1) determined[static_cast<std::size_t>(i)] = false;
        }
        if (m > k) {
            const double s2 = res.squaredNorm() / static_cast<double>(m - k);
            variance.setZero();
            for (Eigen::Index c = 0; c < rank; ++c)
                variance += (V.col(c).array().square() / (sigma[c] * sigma[c])).matrix() * s2;
        }
    }
    for (Eigen::Index c = 0; c < k; ++c) {
        const std::size_t i = fitted_index[static_cast<std::size_t>(c)];
        const auto& p = *params[i];
        ParameterFit pf;
        pf.name = names[i];
        pf.value = result.calibration.*(p.field);
        pf.determined = determined[static_cast<std::size_t>(c)];
        pf.standard_error = pf.determined ? std::sqrt(variance[c]) * (p.upper_bound - p.lower_bound)
                                          : std::numeric_limits<double>::infinity();
        const double uc = std::clamp(u[static_cast<Eigen::Index>(i)], 0.0, 1.0);
        pf.at_bound = uc <= 1e-9 || uc >= 1.0 - 1e-9;
        result.parameter_fits.push_back(pf);
    }
    for (std::size_t i = 0; i < n; ++i) (active[i] ? result.fitted : result.insensitive).push_back(names[i]);
    tracker.end_fit();
    return result;
}

}  // namespace

std::string format_progress(const CalibrationProgress& p) {
    std::string out = fmt::format("calibrate: fit {}/{}, iteration {}, {} simulations, {:.0f} s elapsed",
                                  p.fit, p.fits, p.iteration, p.simulations, p.elapsed_s);
    if (p.eta_s >= 0) out += fmt::format(", about {:.0f} s left", p.eta_s);
    return out;
}

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

void check_parameter_names(const std::vector<std::string>& parameters) {
    core::Diagnostics d;
    std::vector<std::string> known;
    for (const auto& p : cost::calibration_parameters()) known.emplace_back(p.name);
    for (std::size_t i = 0; i < parameters.size(); ++i) {
        const std::string& name = parameters[i];
        if (name.empty()) {
            d.error({"podsim calibrate", 0, 0}, "--params",
                    "an empty parameter name (a comma too many?); `podsim explain calibration` lists them");
        } else if (std::find(parameters.begin(), parameters.begin() + static_cast<std::ptrdiff_t>(i), name) !=
                   parameters.begin() + static_cast<std::ptrdiff_t>(i)) {
            d.error({"podsim calibrate", 0, 0}, "--params", fmt::format("'{}' is given twice", name));
        } else if (!cost::find_calibration_parameter(name)) {
            std::string message = fmt::format("unknown parameter '{}'", name);
            if (auto hint = core::closest_match(name, known))
                message += fmt::format(" (did you mean '{}'?)", *hint);
            d.error({"podsim calibrate", 0, 0}, "--params",
                    message + "; `podsim explain calibration` lists them");
        }
    }
    if (parameters.empty()) d.error({"podsim calibrate", 0, 0}, "--params", "no parameter to fit");
    core::throw_if_errors(d);
}

CalibrationResult calibrate(const std::vector<CalibrationCase>& cases,
                            const std::vector<std::string>& parameters, const cost::Calibration& start,
                            const ProgressCallback& progress) {
    check_parameter_names(parameters);
    CalibrationResult result;
    const int measurements = count_targets(cases);
    const bool single_case = cases.size() == 1;
    const int fits =
        1 + (single_case ? (measurements > 1 ? measurements : 0) : static_cast<int>(cases.size()));
    Tracker tracker(progress, fits);
    Fit all = fit(cases, parameters, start, tracker);
    result.measurements = all.measurements;
    if (all.underdetermined && all.measurements == 0) {
        core::Diagnostics d;
        d.error({"podsim calibrate", 0, 0}, "",
                "nothing to fit: the profiles give no step time and no op category podsim models");
        throw core::UserError(d);
    }
    if (all.underdetermined) {
        const std::size_t keep = static_cast<std::size_t>(std::max(all.measurements, 1));
        std::string suggestion;
        for (std::size_t i = 0; i < std::min(keep, all.by_sensitivity.size()); ++i)
            suggestion += (i ? "," : "") + all.by_sensitivity[i];
        std::string free;
        for (const auto& name : all.by_sensitivity) free += (free.empty() ? "" : ", ") + name;
        core::Diagnostics d;
        d.error({"podsim calibrate", 0, 0}, "--params",
                fmt::format("{} free parameters ({}) but {} measurement{}: the fit is under-determined (many "
                            "parameter values reproduce the measurements equally well, and the fitted ones "
                            "would mean nothing). Fit at most {} (the measurements depend most on: --params "
                            "{}), or add profiles or cases",
                            all.by_sensitivity.size(), free, all.measurements,
                            all.measurements == 1 ? "" : "s", all.measurements, suggestion));
        throw core::UserError(d);
    }
    result.fitted = all.calibration;
    result.parameters = all.fitted;
    result.insensitive = all.insensitive;
    result.iterations = all.iterations;
    result.parameter_fits = all.parameter_fits;
    result.rms_before = rms(residuals(cases, start));
    result.rms_after = rms(residuals(cases, result.fitted));
    const auto fitted_count = static_cast<int>(all.fitted.size());
    if (fitted_count == measurements) {
        result.warnings.push_back(fmt::format(
            "{} parameters fitted to {} measurements: an exact fit is expected whatever the model's "
            "quality, and no uncertainty can be estimated; judge it by the left-out errors",
            fitted_count, measurements));
    }
    std::vector<std::string> undetermined;
    for (const auto& pf : result.parameter_fits)
        if (!pf.determined) undetermined.push_back(pf.name);
    if (!undetermined.empty()) {
        result.warnings.push_back(fmt::format(
            "{} cannot be told apart by these measurements (their effects are collinear): the fitted "
            "values are one of many equally good choices",
            fmt::join(undetermined, ", ")));
    }
    constexpr double kUnknown = std::numeric_limits<double>::quiet_NaN();
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
            Fit without = fit(others, parameters, start, tracker);
            cf.rms_left_out = without.underdetermined ? kUnknown : rms(residuals(one, without.calibration));
        }
        result.cases.push_back(cf);
    }
    if (single_case && measurements > 1) {
        const auto& only = cases[0];
        for (std::size_t t = 0; t < only.targets.size(); ++t) {
            CalibrationCase reduced = only;
            reduced.targets.erase(reduced.targets.begin() + static_cast<std::ptrdiff_t>(t));
            Fit without = fit({reduced}, parameters, start, tracker);
            TargetFit tf{target_name(only.targets[t]), kUnknown};
            if (!without.underdetermined) tf.left_out = residuals({only}, without.calibration)[t];
            result.targets.push_back(tf);
        }
    }
    return result;
}

std::string format_calibration(const CalibrationResult& r) {
    std::string out = fmt::format("podsim calibrate: {} case(s), {} measurement(s), {} iteration(s)\n\n",
                                  r.cases.size(), r.measurements, r.iterations);
    out += fmt::format("  {:<28} {:>12} {:>12} {:>14}\n", "parameter", "default", "fitted", "std. error");
    cost::Calibration defaults = cost::Calibration::defaults();
    bool any_bound = false;
    for (const auto& name : r.parameters) {
        const auto* p = cost::find_calibration_parameter(name);
        auto show = [&](double v) {
            return p->unit == cost::ParameterUnit::time ? fmt::format("{:.4g} s", v)
                                                        : fmt::format("{:.4f}", v);
        };
        std::string error = "-";
        std::string note;
        for (const auto& pf : r.parameter_fits) {
            if (pf.name != name) continue;
            if (!pf.determined)
                error = "undetermined";
            else if (std::isfinite(pf.standard_error))
                error = "± " + show(pf.standard_error);
            if (pf.at_bound) {
                note = "  (at a bound)";
                any_bound = true;
            }
        }
        out += fmt::format("  {:<28} {:>12} {:>12} {:>14}{}\n", name, show(defaults.*(p->field)),
                           show(r.fitted.*(p->field)), error, note);
    }
    for (const auto& name : r.insensitive) {
        out += fmt::format("  {:<28} (no target depends on it: left at its value)\n", name);
    }
    out +=
        "\n  std. error: one standard error from the Jacobian at the fit and the residual spread ('-'\n"
        "  when there are no more measurements than parameters, so no spread to estimate it from).\n";
    if (any_bound) out += "  A parameter at a bound of its range: its error is not meaningful.\n";
    out += fmt::format("\n  rms relative error: {:.1f}% before, {:.1f}% after\n", 100 * r.rms_before,
                       100 * r.rms_after);
    auto percent = [](double v) {
        return std::isnan(v) ? std::string("-") : fmt::format("{:.1f}%", 100 * v);
    };
    out += fmt::format("\n  {:<32} {:>9} {:>9} {:>13}\n", "case", "before", "after", "left out");
    for (const auto& c : r.cases) {
        out +=
            fmt::format("  {:<32} {:>8.1f}% {:>8.1f}% {:>12}\n", c.id, 100 * c.rms_before, 100 * c.rms_after,
                        r.cases.size() > 1 ? percent(c.rms_left_out) : std::string("-"));
    }
    if (r.cases.size() > 1) {
        out +=
            "\n  'left out': the case's error when the parameters are fitted on the other cases only. A\n"
            "  large gap between 'after' and 'left out' means the fit does not generalise (overfitting);\n"
            "  '-': the other cases have fewer measurements than there are parameters.\n";
    }
    if (!r.targets.empty()) {
        out += fmt::format("\n  {:<32} {:>13}\n", "measurement", "left out");
        for (const auto& t : r.targets) out += fmt::format("  {:<32} {:>13}\n", t.name, percent(t.left_out));
        out +=
            "\n  'left out': the measurement's relative error when the parameters are fitted on the\n"
            "  case's other measurements only ('-': too few remain for the parameters).\n";
    }
    for (const auto& w : r.warnings) out += fmt::format("\n  warning: {}\n", w);
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
