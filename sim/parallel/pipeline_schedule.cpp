#include "parallel/pipeline_schedule.hpp"

#include <algorithm>

#include "parallel/parallelism.hpp"

namespace podsim::parallel {

PipelineSchedule pipeline_schedule(const workload::TrainingSpec& training, const network::MeshSpec& mesh,
                                   int layers) {
    PipelineSchedule s;
    s.stages = static_cast<int>(axis_size(mesh, kind_inserting(CollectiveRule::pass_activations).kind));
    if (s.stages <= 1) return s;
    // MaxText's default: as many microbatches as stages.
    s.microbatches = training.pipeline_microbatches > 0 ? training.pipeline_microbatches : s.stages;
    s.layers_per_stage = std::max(1, training.layers_per_pipeline_stage);
    s.repeats = std::max(1, layers / (s.stages * s.layers_per_stage));
    return s;
}

}  // namespace podsim::parallel
