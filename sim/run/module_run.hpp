#pragma once

#include <optional>
#include <string>
#include <vector>

#include "hlo/lower.hpp"
#include "hlo/module.hpp"
#include "run/simulate.hpp"

namespace podsim::run {

// `podsim run MODULE --topology T --slice S`: a compiled XLA module (HLO text or HloProto, gzipped
// or not) simulated on a slice of a topology.
struct ModuleRunRequest {
    std::string path;   // the file; also the name messages use when `bytes` is given
    std::string bytes;  // the module itself, when given (Python: podsim.run_hlo(text)); else read `path`
    std::string topology = "tpu-v4";  // name or file
    std::string slice = "1";
    std::string device_order;  // mesh, devices, or a list of device indices; empty: automatic
    // MFU: a podsim model (name or file) with the step's batch and sequence length, or the model
    // FLOPs per step directly. Without either the report has HFU only.
    std::string model;
    long global_batch = 0;  // sequences per step; 0: from the module's token input (one device)
    long seq_len = 0;
    double model_flops = 0.0;
    bool mfu_attention = false;
    // A calibration file (podsim.calibration/v1); empty: the topology's own, topologies/calibration/
    // NAME.yaml next to it, when there is one, else podsim's defaults.
    std::string calibration;
};

struct ModuleRun {
    ProgramSpec spec;
    Simulation simulation;
    // What the lowering learned (its program moved into `simulation`).
    hlo::LoweredModule lowered;
    std::string module_name;
    std::string format;  // text or proto
    // Memory: "buffer assignment" (the HloProto's, XLA's own peak) or "liveness" (podsim's replay of
    // the module's buffers over the simulated schedule).
    std::string memory_source;
    double liveness_peak_bytes = 0.0;  // podsim's own, also when the assignment gives the peak
    std::string calibration_file;      // applied, or empty
};

// Reads, lowers and simulates the module. Throws core::UserError for bad input (the module, the
// topology or slice, the options).
ModuleRun run_module(const ModuleRunRequest& request, SimulateOptions options = {});

// Whether a file is a compiled XLA module (HLO text, or a *.hlo.pb proto), by its content.
bool is_module_file(const std::string& path);

}  // namespace podsim::run
