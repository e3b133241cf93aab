#pragma once

#include <functional>
#include <string>
#include <vector>

#include "cost/calibration.hpp"
#include "run/run_spec.hpp"

namespace podsim::profile {

// One measured quantity podsim should reproduce.
struct Target {
    // execution_time: the step without its host time (a metrics report's ExecuteTime);
    // category_time "host" is the host time per step, "compile" compilation per step.
    // whole_run: a quantity of the run's whole_run: block by name (profile/whole_run_suite.hpp).
    enum class Kind {
        step_time,
        category_time,
        all_reduce_fraction,
        execution_time,
        whole_run
    } kind = Kind::step_time;
    std::string category;  // for category_time; the quantity for whole_run
    double measured = 0.0;
};

// A config and what was measured when it ran (a published case or a profile).
struct CalibrationCase {
    std::string id;
    run::RunSpec spec;
    std::vector<Target> targets;
};

struct CaseFit {
    std::string id;
    double rms_before = 0.0;    // relative error, default calibration
    double rms_after = 0.0;     // with the fitted calibration
    double rms_left_out = 0.0;  // fitted on the other cases only (leave-one-out); 0 with one case
};

// One fitted parameter: its value and how well the measurements determine it.
struct ParameterFit {
    std::string name;
    double value = 0.0;
    // One standard error (parameter unit), from the Jacobian at the fit: s^2 (J^T J)^-1 with s^2 the
    // residual variance. NaN when the measurements leave no degree of freedom to estimate s from.
    double standard_error = 0.0;
    bool determined = true;  // false: its effect is collinear with other parameters' (J rank-deficient)
    bool at_bound = false;   // the fit pushed it to a bound of its range
};

// With one case, each measurement in turn is left out of the fit and predicted.
struct TargetFit {
    std::string name;       // step_time, or the op category
    double left_out = 0.0;  // relative error when fitted without it; NaN when too few remain
};

// Where a long fit is (every fit: the whole one, then one per left-out case or target).
struct CalibrationProgress {
    int fit = 0;           // 1-based
    int fits = 0;          // in all
    int iteration = 0;     // of the current fit
    long simulations = 0;  // so far, all fits
    double elapsed_s = 0.0;
    double eta_s = -1.0;  // remaining, estimated from the finished fits; < 0 while unknown
};
using ProgressCallback = std::function<void(const CalibrationProgress&)>;

// "calibrate: fit 2/6, iteration 5, 340 simulations, 12 s elapsed, about 40 s left".
std::string format_progress(const CalibrationProgress& progress);

struct CalibrationResult {
    cost::Calibration fitted;
    std::vector<std::string> parameters;   // fitted (others kept)
    std::vector<std::string> insensitive;  // asked for but no target depends on them
    double rms_before = 0.0;
    double rms_after = 0.0;
    int iterations = 0;
    int measurements = 0;                      // targets over all cases
    std::vector<ParameterFit> parameter_fits;  // one per fitted parameter, in `parameters` order
    std::vector<CaseFit> cases;
    std::vector<TargetFit> targets;  // leave-one-target-out, with a single case
    std::vector<std::string> warnings;
};

// Targets of a profile measured while `spec` ran: the step time and each op category podsim
// models (matmul, fusion, the collectives) that the profile has.
CalibrationCase case_from_profile(const std::string& id, const run::RunSpec& spec,
                                  const std::string& profile_path);

// Throws core::UserError listing every name of `parameters` that is empty, given twice or not a
// calibration parameter (with a "did you mean" where one is close), as `calibrate --params` names
// them.
void check_parameter_names(const std::vector<std::string>& parameters);

// Least squares over relative errors, within each parameter's bounds (projected
// Levenberg-Marquardt, finite-difference Jacobian, solved with Eigen). Parameters no target depends
// on are left alone and listed. More free parameters than measurements is refused (core::UserError
// naming the parameters the measurements depend on most); parameters the measurements cannot tell
// apart are reported as undetermined. With several cases, each is also left out once and predicted
// from a fit on the others; with one case, each measurement is, to show whether the fit generalises.
CalibrationResult calibrate(const std::vector<CalibrationCase>& cases,
                            const std::vector<std::string>& parameters, const cost::Calibration& start,
                            const ProgressCallback& progress = {});

// The fit for a person, and as a podsim.calibration/v1 file a run config can include.
std::string format_calibration(const CalibrationResult& result);
std::string calibration_yaml(const CalibrationResult& result, const std::string& source);

}  // namespace podsim::profile
