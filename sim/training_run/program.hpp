#pragma once

#include <compare>
#include <string>

#include "core/time.hpp"

namespace podsim::training_run {

enum class ProgramKind { train, eval };

// What makes two executions the same compiled program: its graph signature and shapes.
struct ProgramKey {
    ProgramKind kind = ProgramKind::train;
    int seq_len = 0;
    long batch = 0;
    long accumulated_rows = 0;  // eval with results accumulated on the device: rows so far
    int part = 0;               // graph split around ops without a lowering: which part (0-based)
    auto operator<=>(const ProgramKey&) const = default;
};

// One distinct program: simulated once with run::simulate, then executed many times.
struct Program {
    ProgramKey key;
    std::string name;
    core::Time device_time = 0;  // one execution on the device (no host time)
    double device_s = 0.0;       // the same in seconds
    int ops = 0;                 // fused device ops: the graph size host costs scale with
    int tensors = 0;             // tensors the step syncs at its end (FetchTensorData)
    int arguments = 0;           // device arrays passed in (JAX dispatch)
    double compile_s = 0.0;  // compiling it (calibration compile_time_base + per op, or runtime.compile_time)
};

}  // namespace podsim::training_run
