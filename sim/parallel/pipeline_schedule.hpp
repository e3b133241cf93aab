#pragma once

#include "network/mesh_spec.hpp"
#include "workload/training_spec.hpp"

namespace podsim::parallel {

// How the layers of a step are spread over pipeline stages, as MaxText's SPMD pipeline does it
// (MaxText layers/pipeline.py, configs/base.yml):
//  - the layers split into chunks of `layers_per_stage` consecutive layers; chunk c runs on stage
//    c mod stages in repeat c / stages: one repeat is GPipe, more is the circular schedule;
//  - every microbatch goes through every chunk in order, so a stage runs microbatch m of repeat r as
//    its (r * microbatches + m)-th forward, one step behind the stage before it, and the backwards
//    in the reverse order once every forward is done;
//  - the bubble, the share of the pipelined time a stage waits for another, is
//    (stages - 1) / (repeats * microbatches + stages - 1) when the stages take the same time.
struct PipelineSchedule {
    int stages = 1;
    int microbatches = 1;  // num_pipeline_microbatches
    int layers_per_stage = 1;
    int repeats = 1;

    bool pipelined() const { return stages > 1; }
    bool circular() const { return repeats > 1; }
    int chunk_of_layer(int layer) const { return layer / layers_per_stage; }
    int stage_of_layer(int layer) const { return chunk_of_layer(layer) % stages; }
    int repeat_of_layer(int layer) const { return chunk_of_layer(layer) / stages; }
    // Iterations a stage runs forward: one per microbatch and repeat, plus the bubble's stages - 1.
    int iterations() const { return repeats * microbatches + stages - 1; }
    double bubble_fraction() const {
        return static_cast<double>(stages - 1) / static_cast<double>(iterations());
    }
};

// The schedule of `training` on `mesh` for a model of `layers` layers (one stage without a pipeline
// axis). Assumes the sharding checks passed (parallel/sharding_errors.hpp).
PipelineSchedule pipeline_schedule(const workload::TrainingSpec& training, const network::MeshSpec& mesh,
                                   int layers);

}  // namespace podsim::parallel
