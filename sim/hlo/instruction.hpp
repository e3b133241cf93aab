#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "hlo/opcode.hpp"
#include "hlo/replica_groups.hpp"
#include "hlo/shape.hpp"

namespace podsim::hlo {

enum class FusionKind : std::uint8_t { none, loop, input, output, custom };

struct DotDimensions {
    std::vector<std::int64_t> lhs_batch, rhs_batch, lhs_contracting, rhs_contracting;
};

// Output leaf `output_index` shares its buffer with leaf `operand_index` of operand `operand`
// (output_to_operand_aliasing of fusions and custom calls).
struct OutputOperandAlias {
    std::vector<std::int64_t> output_index;
    std::int64_t operand = 0;
    std::vector<std::int64_t> operand_index;
};

// One HLO instruction as podsim reads it: what lowering and pricing need, not every attribute.
inline constexpr std::int64_t kNoTripCount = -1;
inline constexpr std::int64_t kBadTripCount = -2;

struct Instruction {
    std::string name;
    Opcode opcode = Opcode::parameter;
    // async-start/-update/-done written as `<op>-start` (fusion-start, reduce-scatter-start): the
    // wrapped op, whose attributes (calls=, kind=, ...) the instruction carries.
    std::optional<Opcode> wrapped;
    Shape shape;
    std::vector<int> operands;  // instructions of the same computation
    // Called computations (indices into Module::computations): calls=, to_apply=, the branches of a
    // conditional in order; a while's body and condition are apart.
    std::vector<int> called;
    int body = -1;
    int condition = -1;
    // while: backend_config known_trip_count, kNoTripCount if absent, kBadTripCount if it is no
    // whole number of iterations (negative, not a number, beyond int64)
    std::int64_t known_trip_count = kNoTripCount;
    std::int64_t parameter_number = -1;
    std::int64_t tuple_index = -1;
    FusionKind fusion_kind = FusionKind::none;
    std::string custom_call_target;
    std::string backend_config;  // custom calls only: they are priced from it
    std::string op_name;         // metadata op_name (the framework's name for the op)
    std::vector<std::int64_t> dimensions;
    DotDimensions dot;
    std::int64_t kernel_output_feature_dim = -1;  // convolution: the rhs dimension of output features
    std::int64_t feature_group_count = 1;
    std::int64_t batch_group_count = 1;
    ReplicaGroups replica_groups;
    std::vector<std::pair<std::int64_t, std::int64_t>> source_target_pairs;
    std::vector<OutputOperandAlias> output_operand_aliasing;
    std::int64_t channel_id = 0;
    bool use_global_device_ids = false;
    std::string comparison_direction;           // compare: EQ, NE, LT, LE, GT, GE
    std::optional<std::int64_t> integer_value;  // constant: a scalar integer literal
    int line = 0;                               // 1-based line of the text; 0 when read from a proto
};

}  // namespace podsim::hlo
