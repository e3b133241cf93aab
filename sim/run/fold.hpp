#pragma once

#include <optional>
#include <string>
#include <vector>

#include "memory/memory_profile.hpp"
#include "parallel/partition.hpp"
#include "run/run_spec.hpp"
#include "run/simulate.hpp"
#include "scheduler/timeline.hpp"

// Folding layers (docs/model.md, "Folding layers"): a deep model simulated cut to a few layers,
// with the periods its scheduler jumped spliced into the report.
namespace podsim::run {

// What a folded simulation adds to the cut model's to stand for the whole one.
struct Fold {
    std::vector<scheduler::Splice> splices;  // in time order
    std::vector<std::size_t> region_of_splice;
    std::vector<std::size_t> jump_of_region;
    parallel::StateBytes state;  // of the whole model
    long ops = 0;                // of the whole model's program
    int cut_layers = 0, layers = 0;
};

// Layers of the cut model that stands for a model of `layers`.
int cut_layers(int layers);

// The splices that make the cut model's step the whole model's, when its schedule certifies them
// (every run of layers jumped once, by a period that divides the layers added); nullopt otherwise.
std::optional<Fold> make_fold(const RunSpec& spec, const Simulation& cut);

// The name the whole model gives the op at the folded memory peak (its layer renumbered).
std::string folded_peak_name(const Simulation& sim, const Fold& fold, const memory::FoldedPeak& peak);

}  // namespace podsim::run
