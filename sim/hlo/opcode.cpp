#include "hlo/opcode.hpp"

#include <algorithm>
#include <array>

namespace podsim::hlo {
namespace {

constexpr std::array<std::string_view, 136> kNames = {
    "abs",
    "acos",
    "acosh",
    "add",
    "add-dependency",
    "after-all",
    "all-gather",
    "all-gather-done",
    "all-gather-start",
    "all-reduce",
    "all-reduce-done",
    "all-reduce-start",
    "all-to-all",
    "and",
    "asin",
    "asinh",
    "async-done",
    "async-start",
    "async-update",
    "atan",
    "atan2",
    "atanh",
    "batch-norm-grad",
    "batch-norm-inference",
    "batch-norm-training",
    "bitcast",
    "bitcast-convert",
    "broadcast",
    "call",
    "cbrt",
    "ceil",
    "cholesky",
    "clamp",
    "count-leading-zeros",
    "collective-broadcast",
    "collective-permute",
    "collective-permute-done",
    "collective-permute-start",
    "collective-reduce",
    "compare",
    "complex",
    "concatenate",
    "conditional",
    "constant",
    "convert",
    "convolution",
    "copy",
    "copy-done",
    "copy-start",
    "cosine",
    "cosh",
    "custom-call",
    "divide",
    "domain",
    "dot",
    "dynamic-reshape",
    "dynamic-slice",
    "dynamic-update-slice",
    "erf",
    "exponential",
    "exponential-minus-one",
    "fft",
    "floor",
    "fusion",
    "gather",
    "get-dimension-size",
    "get-tuple-element",
    "imag",
    "infeed",
    "iota",
    "is-finite",
    "log",
    "log-plus-one",
    "logistic",
    "map",
    "maximum",
    "minimum",
    "mulhi",
    "multiply",
    "negate",
    "not",
    "opt-barrier",
    "or",
    "outfeed",
    "pad",
    "parameter",
    "partition-id",
    "popcnt",
    "power",
    "ragged-all-to-all",
    "ragged-dot",
    "real",
    "recv",
    "recv-done",
    "reduce",
    "reduce-precision",
    "reduce-scatter",
    "reduce-window",
    "remainder",
    "replica-id",
    "reshape",
    "reverse",
    "rng",
    "rng-bit-generator",
    "rng-get-and-update-state",
    "round-nearest-afz",
    "round-nearest-even",
    "rsqrt",
    "scaled-dot",
    "scan",
    "scatter",
    "select",
    "select-and-scatter",
    "send",
    "send-done",
    "set-dimension-size",
    "shift-left",
    "shift-right-arithmetic",
    "shift-right-logical",
    "shuffle",
    "sign",
    "sine",
    "sinh",
    "slice",
    "sort",
    "sqrt",
    "stochastic-convert",
    "subtract",
    "tan",
    "tanh",
    "topk",
    "transpose",
    "triangular-solve",
    "tuple",
    "while",
    "xor",
};
static_assert(kNames.size() == static_cast<std::size_t>(Opcode::xor_) + 1);

}  // namespace

std::string_view opcode_name(Opcode opcode) {
    return kNames[static_cast<std::size_t>(opcode)];
}

std::optional<Opcode> parse_opcode(std::string_view name) {
    // The list is sorted by name except for the few hlo_opcode.h keeps by enum name: search it all.
    for (std::size_t i = 0; i < kNames.size(); ++i) {
        if (kNames[i] == name) return static_cast<Opcode>(i);
    }
    return std::nullopt;
}

bool is_alias(Opcode opcode) {
    switch (opcode) {
        case Opcode::parameter:
        case Opcode::get_tuple_element:
        case Opcode::tuple:
        case Opcode::bitcast:
        case Opcode::after_all:
        case Opcode::add_dependency:
        case Opcode::opt_barrier:
        case Opcode::domain:
            return true;
        default:
            return false;
    }
}

bool is_collective(Opcode opcode) {
    switch (opcode) {
        case Opcode::all_gather:
        case Opcode::all_reduce:
        case Opcode::reduce_scatter:
        case Opcode::all_to_all:
        case Opcode::ragged_all_to_all:
        case Opcode::collective_permute:
        case Opcode::collective_broadcast:
        case Opcode::collective_reduce:
            return true;
        default:
            return false;
    }
}

bool is_async_start(Opcode opcode) {
    return opcode == Opcode::all_gather_start || opcode == Opcode::all_reduce_start ||
           opcode == Opcode::collective_permute_start || opcode == Opcode::copy_start ||
           opcode == Opcode::async_start || opcode == Opcode::send || opcode == Opcode::recv;
}

bool is_async_done(Opcode opcode) {
    return opcode == Opcode::all_gather_done || opcode == Opcode::all_reduce_done ||
           opcode == Opcode::collective_permute_done || opcode == Opcode::copy_done ||
           opcode == Opcode::async_done || opcode == Opcode::send_done || opcode == Opcode::recv_done;
}

Opcode base_of_async(Opcode opcode) {
    switch (opcode) {
        case Opcode::all_gather_start:
        case Opcode::all_gather_done:
            return Opcode::all_gather;
        case Opcode::all_reduce_start:
        case Opcode::all_reduce_done:
            return Opcode::all_reduce;
        case Opcode::collective_permute_start:
        case Opcode::collective_permute_done:
            return Opcode::collective_permute;
        case Opcode::copy_start:
        case Opcode::copy_done:
            return Opcode::copy;
        default:
            return opcode;
    }
}

}  // namespace podsim::hlo
