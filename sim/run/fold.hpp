#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "memory/memory_profile.hpp"
#include "parallel/partition.hpp"
#include "run/run_spec.hpp"
#include "run/simulate.hpp"
#include "scheduler/periods.hpp"
#include "scheduler/timeline.hpp"

// Folding layers (docs/model.md, "Folding layers"): a deep model simulated cut to a few layers,
// with the periods its scheduler jumped spliced into the report.
namespace podsim::run {

// What a folded simulation adds to the cut model's to stand for the whole one.
struct Fold {
    std::vector<scheduler::Splice> splices;  // of runs of layers, in time order
    std::vector<std::size_t> region_of_splice;
    std::vector<std::size_t> jump_of_region;
    // Folded microbatches: copies of one microbatch's period, which holds splices of its own.
    std::optional<scheduler::Splice> microbatch;
    // What the report adds up: `splices`, `microbatch`, and the splices inside the microbatch's
    // period once more per copy of it (each period's sums, as many times as it runs).
    std::vector<scheduler::Splice> report_splices;
    parallel::StateBytes state;  // of the whole model
    long ops = 0;                // of the whole model's program
    int cut_layers = 0, layers = 0;
    int cut_microbatches = 0, microbatches = 0;  // cut_microbatches 0: microbatches not folded
};

// Layers of the cut model that stands for a model of `layers`, with synchronous collectives or not
// (docs/model.md, "Folding layers").
int cut_layers(int layers, bool synchronous);

// Microbatches of the cut model that stands for a step of `microbatches` of `global_batch`
// sequences, or 0 when they are not folded (too few, or the cut batch would not be whole).
int cut_microbatches(int microbatches, std::int64_t global_batch);

// The periods whose repetition certifies folded microbatches (scheduler::ScheduleOptions::watch):
// one microbatch long, from a few block starts early in the forward of microbatch 1 (which is the
// same as microbatch 2), ending in microbatch 3; empty when the program has fewer microbatches.
std::vector<scheduler::PeriodicRegion> microbatch_periods(const parallel::DeviceProgram& program);

// The splices that make the cut model's step the whole model's, when its schedule certifies them
// (every run of layers jumped once, by a period that divides the layers added); nullopt otherwise.
std::optional<Fold> make_fold(const RunSpec& spec, const Simulation& cut);

// The name the whole model gives the op at the folded memory peak (its layer renumbered).
std::string folded_peak_name(const Simulation& sim, const Fold& fold, const memory::FoldedPeak& peak);

}  // namespace podsim::run
