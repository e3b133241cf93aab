#pragma once

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

struct CalibrationResult {
    cost::Calibration fitted;
    std::vector<std::string> parameters;   // fitted (others kept)
    std::vector<std::string> insensitive;  // asked for but no target depends on them
    double rms_before = 0.0;
    double rms_after = 0.0;
    int iterations = 0;
    std::vector<CaseFit> cases;
};

// Targets of a profile measured while `spec` ran: the step time and each op category podsim
// models (matmul, fusion, the collectives) that the profile has.
CalibrationCase case_from_profile(const std::string& id, const run::RunSpec& spec,
                                  const std::string& profile_path);

// Least squares over relative errors, within each parameter's bounds (projected
// Levenberg-Marquardt, finite-difference Jacobian, solved with Eigen). Parameters no target depends
// on are left alone and listed. With several cases, each is also left out once and predicted from a
// fit on the others, to show whether the fit generalises.
CalibrationResult calibrate(const std::vector<CalibrationCase>& cases,
                            const std::vector<std::string>& parameters, const cost::Calibration& start);

// The fit for a person, and as a podsim.calibration/v1 file a run config can include.
std::string format_calibration(const CalibrationResult& result);
std::string calibration_yaml(const CalibrationResult& result, const std::string& source);

}  // namespace podsim::profile
