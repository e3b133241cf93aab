#pragma once

#include <map>
#include <utility>

#include "run/run_spec.hpp"
#include "run/simulate.hpp"
#include "training_run/program.hpp"
#include "training_run/run_plan.hpp"

namespace podsim::training_run {

// The distinct programs of a run, each simulated once: a training step (forward, backward,
// optimizer) and an evaluation step (the forward part of the same simulated step) per (sequence
// length, batch), with the device-side concatenation of accumulated results, and the parts of a
// graph split around ops without an XLA lowering. The step is simulated with no host time: the
// host is the whole-run simulation's own resource. Only what the programs need is kept of each
// simulated step, so memory grows with the distinct programs, never with the run's length; more
// than config::kMaxWholeRunPrograms of them is a core::UserError.
class ProgramLibrary {
  public:
    ProgramLibrary(const run::RunSpec& base, const RunPlan& plan);
    const Program& get(const ProgramKey& key);
    std::size_t distinct_programs() const { return programs_.size(); }
    std::size_t step_simulations() const { return steps_.size(); }

    // What a program takes from the simulated step at (seq_len, batch).
    struct StepShape {
        core::Time step_time = 0;     // the whole step's timeline
        int ops = 0;                  // device ops (no host op)
        int forward_ops = 0;          // of the forward phase
        core::Time forward_span = 0;  // first forward op's start to last forward op's end
    };
    const StepShape& step(int seq_len, long batch);

  private:
    run::RunSpec base_;
    RunPlan plan_;
    std::map<std::pair<int, long>, StepShape> steps_;
    std::map<ProgramKey, Program> programs_;
};

// Parameter tensors of a model (weights and biases counted apart, q, k, v apart), the unit of
// PyTorch/XLA's per-tensor host work.
int parameter_tensors(const run::RunSpec& spec);
// Optimizer state tensors per parameter tensor: Adam/AdamW two moments, Adafactor row and column
// statistics, SGD momentum; plus one for a master copy.
int optimizer_state_per_parameter(const run::RunSpec& spec);

}  // namespace podsim::training_run
