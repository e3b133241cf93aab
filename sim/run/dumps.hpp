#pragma once

#include <string>
#include <string_view>

#include "run/run_spec.hpp"
#include "run/simulate.hpp"

namespace podsim::run {

// What `podsim run --dump STAGE` prints: one stage of the pipeline as a table, for a simulation
// made without SimulateOptions::fold (the dumps show the whole step's program and timeline).
//   opgraph   the unsharded step of one microbatch: each op, its matmul shape and FLOPs, its inputs
//   mapping   mesh axis -> torus dimensions, and the chips of each group
//   program   the partitioned program: each op's resource, FLOPs, bytes, time and dependencies
//   timeline  every op's start and end, in order of start
// An unknown stage is a std::invalid_argument (the CLI checks the name first).
std::string dump_stage(const RunSpec& spec, const Simulation& sim, std::string_view stage);

std::string dump_opgraph(const Simulation& sim, const RunSpec& spec);
std::string dump_mapping(const Simulation& sim);
std::string dump_program(const Simulation& sim);
std::string dump_timeline(const Simulation& sim);

}  // namespace podsim::run
