#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "hardware/topology_spec.hpp"
#include "hlo/module.hpp"
#include "hlo/placement.hpp"
#include "network/mesh_spec.hpp"
#include "parallel/device_program.hpp"

namespace podsim::hlo {

struct LowerOptions {
    const hardware::TopologySpec& topology;
    hardware::SliceShape slice;
    DeviceOrder device_order;
};

// A compiled module as one device runs it: the per-device program the scheduler, memory and report
// consume (the seam native lowering also feeds), with what the module says about itself.
struct LoweredModule {
    parallel::DeviceProgram program;
    std::int64_t devices = 1;       // the module's devices (partitions x replicas)
    std::string placement;          // how they sit on the slice (Placement::description)
    network::MeshSpec mesh;         // the device mesh the module names, or one axis of all its devices
    double flops_per_device = 0.0;  // executed: every loop iteration counted
    // Bytes per step of each collective kind, the full array as the scaling book counts it (what an
    // all-gather gathers, what a reduce-scatter or all-reduce reduces), per device.
    std::map<std::string, double> collective_bytes;
    std::map<std::string, int> collective_counts;
    std::vector<std::string> notes;  // what the module could not tell and podsim assumed
    int loops = 0;                   // while loops run (each counted once)
    long compiled_kernels = 0;       // distinct instructions that run as kernels (a loop body once)
};

// Flattens the entry computation in its schedule: loops run their trip count (the while's
// known_trip_count, else its condition `i < N` with the induction variable's start and step),
// calls are inlined, a conditional runs its costliest branch, async pairs overlap from start to
// done. Every kernel (fusion, custom call, unfused op) is a compute op priced by WorkModel; every
// collective an op on the ICI resource of its replica groups' torus placement; every buffer a
// Buffer with its first and last op (entry parameters and outputs live the whole step; while state,
// dynamic-update-slice and declared output-operand aliases update their buffer in place; donated
// parameters hold the outputs aliased to them). Throws core::UserError when the module cannot run
// on the slice, or a loop's trip count cannot be told.
LoweredModule lower_module(const Module& module, const LowerOptions& options);

// How many times a while loop runs, or nullopt when neither its backend_config nor its condition
// says (`why` then says what was missing).
std::optional<std::int64_t> trip_count(const Module& module, const Computation& computation,
                                       const Instruction& loop, std::string& why);

}  // namespace podsim::hlo
