#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "hlo/buffer_assignment.hpp"
#include "hlo/instruction.hpp"

namespace podsim::hlo {

struct Computation {
    std::string name;
    std::vector<Instruction> instructions;  // in schedule order
    int root = -1;
    std::vector<int> parameters;  // by parameter number
    int line = 0;
};

// Output leaf `output_index` of the entry computation lives in the buffer of parameter
// `parameter` (input_output_alias: a donated argument).
struct InputOutputAlias {
    std::vector<std::int64_t> output_index;
    std::int64_t parameter = 0;
    std::vector<std::int64_t> parameter_index;
};

// A compiled XLA module (HloModule text, or an HloProto / HloModuleProto).
struct Module {
    std::string name;
    std::string path;    // the file it was read from, for messages
    std::string format;  // "text" or "proto"
    std::vector<Computation> computations;
    int entry = -1;
    bool is_scheduled = false;
    std::int64_t num_partitions = 1;
    std::int64_t replica_count = 1;
    std::vector<InputOutputAlias> input_output_alias;
    std::optional<BufferAssignment> buffer_assignment;

    const Computation& entry_computation() const { return computations[static_cast<std::size_t>(entry)]; }
    std::int64_t devices() const { return num_partitions * replica_count; }
    std::size_t instruction_count() const;
};

}  // namespace podsim::hlo
