#pragma once

#include <array>
#include <string_view>

#include "core/key.hpp"

namespace podsim::hardware {

// In the order of WraparoundRule.
inline constexpr std::array<std::string_view, 4> kWraparoundNames = {"always", "none", "whole_cubes_of_4",
                                                                     "length_16"};

// The most chips one simulated slice may have: 16 times a full TPU v4 pod (4,096 chips) and 7 times a
// v5p pod (8,960). The torus, its links and every collective's rings grow with it; beyond this a
// config costs gigabytes and minutes (256x256x256 exhausted memory).
inline constexpr long kMaxSliceChips = 65'536;

// Every key of podsim.topology/v1 (`podsim explain topology`). Adding a key: one line here (its
// default, bounds and help live nowhere else), then read it in config/topology.cpp with
// MapReader's Key overloads and give the struct member its default from topology_key("...").
// Upper bounds on rates and sizes are 1000x the largest shipped value: they keep unit typos
// (`1e300 TB/s`) from becoming infinities, not realistic hardware out.
using core::Dimension;
using core::KeyKind;
inline constexpr core::Key kTopologyKeys[] = {
    {.path = "schema", .required = true, .help = "must be podsim.topology/v1"},
    {.path = "name", .required = true, .help = "topology name"},
    {.path = "source", .help = "where the numbers come from (each number may also carry its own)"},
    {.path = "notes", .help = "free text"},
    {.path = "chip", .kind = KeyKind::mapping, .required = true, .help = "one chip"},
    {.path = "chip.name", .default_note = "topology name", .help = "chip name"},
    {.path = "chip.peak_flops",
     .kind = KeyKind::quantity,
     .dimension = Dimension::flop_rate,
     .required = true,
     .default_note = "(required: bf16)",
     .maximum = 1e18,
     .positive = true,
     .help = "peak matmul rate per chip by operand dtype, e.g. {bf16: 275 TFLOP/s}",
     .type = "mapping dtype -> compute rate"},
    {.path = "chip.hbm_capacity",
     .kind = KeyKind::quantity,
     .dimension = Dimension::bytes,
     .required = true,
     .maximum = 1.2e14,
     .positive = true,
     .help = "HBM per chip"},
    {.path = "chip.hbm_bytes_limit",
     .kind = KeyKind::quantity,
     .dimension = Dimension::bytes,
     .default_note = "hbm_capacity",
     .maximum = 1.2e14,
     .positive = true,
     .help = "what the runtime lets XLA allocate per chip (JAX's memory_stats() bytes_limit): the memory "
             "verdict's limit. GPU: XLA_PYTHON_CLIENT_MEM_FRACTION of the device; TPU: HBM less what "
             "the runtime reserves"},
    {.path = "chip.hbm_bandwidth",
     .kind = KeyKind::quantity,
     .dimension = Dimension::bandwidth,
     .required = true,
     .maximum = 1e16,
     .positive = true,
     .help = "HBM bandwidth per chip"},
    {.path = "chip.mxu_tile",
     .kind = KeyKind::integer,
     .unit = "elements",
     .default_value = 128,
     .minimum = 1,
     .maximum = 4096,
     .help = "systolic array side; matmul dimensions are padded to it",
     .source = "128 on TPU v2-v5 (How to Scale Your Model, TPUs chapter), 256 on v6e"},
    {.path = "chip.tensorcores_per_chip",
     .kind = KeyKind::integer,
     .unit = "TensorCores",
     .default_value = 1,
     .minimum = 1,
     .maximum = 16,
     .help = "physical TensorCores per chip",
     .source =
         "2 on v2, v3, v4, v5p; 1 on v5e, v6e (Cloud TPU system architecture; jax.experimental.pallas.tpu."
         "ChipVersion)"},
    {.path = "chip.devices_per_chip",
     .kind = KeyKind::integer,
     .unit = "devices",
     .default_value = 1,
     .minimum = 1,
     .maximum = 16,
     .help = "JAX/PyTorch-XLA devices per chip: meshes count these; each gets peak, HBM and its bandwidth / "
             "devices_per_chip",
     .source = "v2/v3: each TensorCore is a device (a v3-8 is 4 chips, 8 devices); v4/v5p: megacore, the two "
               "TensorCores are one device; v5e/v6e: one TensorCore (Cloud TPU docs)"},
    {.path = "chip.intra_chip_bandwidth",
     .kind = KeyKind::quantity,
     .dimension = Dimension::bandwidth,
     .default_note = "unset (required when devices_per_chip > 1)",
     .maximum = 1e16,
     .help =
         "one direction between two devices of one chip: what collectives between them move at instead of "
         "ICI links"},
    {.path = "chip.streaming_multiprocessors",
     .kind = KeyKind::integer,
     .unit = "SMs",
     .default_value = 0,
     .minimum = 0,
     .maximum = 4096,
     .help = "a GPU's streaming multiprocessors: compiled by XLA:GPU, whose split-K rewrite computes a dot "
             "with few output tiles as fp32 partial sums over slices of its contraction; 0: a TPU",
     .source = "132 on H100 SXM and H200 (NVIDIA H100 Tensor Core GPU Architecture whitepaper, 2022; the "
               "H200 is the same GH100 configuration)"},
    {.path = "chip.clock",
     .kind = KeyKind::quantity,
     .dimension = Dimension::frequency,
     .default_note = "unset",
     .maximum = 1e11,
     .help = "clock (informational)"},
    {.path = "ici", .kind = KeyKind::mapping, .required = true, .help = "inter-chip interconnect"},
    {.path = "ici.dims",
     .kind = KeyKind::integer,
     .unit = "dimensions",
     .default_value = 3,
     .minimum = 1,
     .maximum = 4,
     .help = "torus dimensions",
     .source = "slice shapes have at most 4 dimensions"},
    {.path = "ici.link_bandwidth",
     .kind = KeyKind::quantity,
     .dimension = Dimension::bandwidth,
     .required = true,
     .maximum = 1e14,
     .positive = true,
     .help = "one direction of one link"},
    {.path = "ici.hop_latency",
     .kind = KeyKind::quantity,
     .dimension = Dimension::time,
     .required = true,
     .maximum = 1e-3,
     .help = "latency per hop"},
    {.path = "ici.wraparound",
     .kind = KeyKind::choice,
     .choices = kWraparoundNames,
     .default_string = "always",
     .help = "which dimensions wrap",
     .source = "a torus wraps every dimension longer than 2; every shipped topology states its rule"},
    {.path = "ici.max_slice",
     .kind = KeyKind::shape,
     .required = true,
     .minimum = 1,
     .maximum = kMaxSliceChips,
     .help = "largest slice, e.g. 16x16x16"},
    {.path = "ici.twisted_torus",
     .kind = KeyKind::boolean,
     .help = "twisted tori available for n x n x 2n shapes"},
    {.path = "host", .kind = KeyKind::mapping, .help = "hosts"},
    {.path = "host.chips_per_host",
     .kind = KeyKind::integer,
     .unit = "chips",
     .default_value = 4,
     .minimum = 1,
     .maximum = 256,
     .help = "chips attached to one host",
     .source = "4 on TPU v2-v5p hosts (Cloud TPU docs)"},
    {.path = "host.host_memory",
     .kind = KeyKind::quantity,
     .dimension = Dimension::bytes,
     .default_note = "unset",
     .maximum = 1e15,
     .help = "RAM per host"},
    {.path = "host.transfer_bandwidth_per_chip",
     .kind = KeyKind::quantity,
     .dimension = Dimension::bandwidth,
     .default_note = "unknown",
     .maximum = 1e14,
     .help =
         "HBM <-> host memory per chip and direction (PCIe DMA); what remat offload moves activations at"},
    {.path = "dcn", .kind = KeyKind::mapping, .help = "data-center network between slices"},
    {.path = "dcn.bandwidth_per_chip",
     .kind = KeyKind::quantity,
     .dimension = Dimension::bandwidth,
     .default_note = "none (no multislice)",
     .maximum = 1e14,
     .help = "what each chip can send across slices"},
    {.path = "dcn.bandwidth_per_host",
     .kind = KeyKind::quantity,
     .dimension = Dimension::bandwidth,
     .default_note = "none (no multislice)",
     .maximum = 1e14,
     .help = "what each host's NICs send across slices; shared by its chips (instead of bandwidth_per_chip)"},
    {.path = "dcn.latency",
     .kind = KeyKind::quantity,
     .dimension = Dimension::time,
     .default_value = 0,
     .maximum = 1,
     .help = "latency per DCN transfer"},
};

consteval const core::Key& topology_key(std::string_view path) {
    return core::find_key(kTopologyKeys, path);
}

}  // namespace podsim::hardware
