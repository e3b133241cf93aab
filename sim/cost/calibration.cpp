#include "cost/calibration.hpp"

namespace podsim::cost {

// The one place where the cost model's defaults live, each with where it comes from. "Calibrated on
// case X" names a case of tests/validation/; those cases are then fits, not tests, and the others
// are the held-out check (README, "Validation").
const std::vector<CalibrationParameter>& calibration_parameters() {
    static const std::vector<CalibrationParameter> params = {
        {"mxu_efficiency", ParameterUnit::fraction, &Calibration::mxu_efficiency, 0.741, 0.05, 1.0,
         "fraction of peak FLOP/s that a large, tile-aligned matmul fusion reaches, under every framework "
         "(XLA compiles the matmuls of JAX and PyTorch/XLA programs alike)",
         "calibrated on cases maxtext-22b-fsdp-v4-128, V5E-16b-1x-v5e-256, V5P-32b-1x-v5p-128 and "
         "V5P-512b-1x-v5p-1024 (MaxText READMEs: v4, v5e and v5p, 22B to 512B) by least squares (podsim "
         "calibrate --suite DIR --params mxu_efficiency over those four cases, +/- 0.010): "
         "-0.2%, -2.3%, -1.7%, +3.8% (22B, 16B, 32B, 512B); left out one at a time within 6% (podsim "
         "validate). The PaLM case stays held out"},
        {"attention_traffic_pytorch_xla", ParameterUnit::factor, &Calibration::attention_traffic_pytorch_xla,
         2.62, 1.0, 20.0,
         "multiplies the HBM bytes of the ops on the S x S scores of dot-product attention (both attention "
         "matmuls, the softmax, their backward and recompute) in graphs PyTorch/XLA traces from eager "
         "attention modules that drop out the attention weights: Hugging Face GPT-2's attention is a chain "
         "of separate ops (scale, causal where, softmax, cast, dropout with its mask) that XLA fuses only in "
         "part, about 1.8x the passes podsim counts for a JAX program, plus the dropout's random bits "
         "(docs/model.md). Models without attention dropout (model attention_dropout 0: Llama) pay 1",
         "calibrated on cases gpt2-2b-fsdp-v4-8, gpt2-16b-fsdp-v4-64, gpt2-20b-fsdp-v4-128, "
         "gpt2-32b-fsdp-v4-128, gpt2-64b-fsdp-v4-256 and gpt2-128b-fsdp-v4-512, the six rows of the "
         "PyTorch/XLA FSDP blog (2023, Table 1), with mxu_efficiency held at its MaxText fit and FSDP "
         "all-gathers as PyTorch/XLA runs them (runtime.gather_via_all_reduce), by least squares (podsim "
         "calibrate over those six cases: 2.617 +/- 0.284): errors -1.2%, -2.5%, +6.1%, +2.0%, +0.8%, "
         "-8.9% (2B to 128B); left out one at a time within 9.2% (podsim validate)"},
        {"mxu_medium_shape_factor", ParameterUnit::fraction, &Calibration::mxu_medium_shape_factor, 1.0, 0.1,
         1.0,
         "multiplies the MXU efficiency of matmuls whose narrowest dimension is 2 to 8 MXU tiles (256-1023 "
         "on a 128-wide MXU)",
         "1.0: no published TPU measurement in tests/validation times matmuls by shape; fit it with "
         "podsim calibrate on an op-level profile (XProf xplane, or a podsim trace)"},
        {"mxu_small_shape_factor", ParameterUnit::fraction, &Calibration::mxu_small_shape_factor, 1.0, 0.1,
         1.0,
         "multiplies the MXU efficiency of matmuls whose narrowest dimension is under 2 MXU tiles (attention "
         "with 128-wide heads, small batches)",
         "1.0: as mxu_medium_shape_factor"},
        {"hbm_efficiency", ParameterUnit::fraction, &Calibration::hbm_efficiency, 0.85, 0.3, 1.0,
         "fraction of peak HBM bandwidth that a memory-bound fusion streams at",
         "assumption: streaming kernels reach 80-90% of HBM peak on TPU v4 (scaling-book roofline chapter); "
         "calibrate against a profile"},
        {"op_overhead", ParameterUnit::time, &Calibration::op_overhead, 2e-6, 0.0, 1e-4,
         "fixed time per fused op (launch, pipeline fill and drain)",
         "assumption: about 2 us between back-to-back small fusions in XProf trace viewer captures; "
         "calibrate"},
        {"host_overhead_jax", ParameterUnit::time, &Calibration::host_overhead_jax, 0.2e-3, 0.0, 10.0,
         "host time per step under JAX (asynchronous dispatch: hidden unless longer than the device step)",
         "assumption: jitted step dispatch is sub-millisecond (JAX docs, 'Asynchronous dispatch')"},
        {"host_overhead_pytorch_xla", ParameterUnit::time, &Calibration::host_overhead_pytorch_xla, 30e-3,
         0.0, 10.0,
         "host time per step under PyTorch/XLA: lazy-tensor tracing and graph hashing before the device runs",
         "assumption: tens of ms per step for transformer graphs of a few thousand ops (PyTorch/XLA "
         "troubleshooting guide, 'tracing overhead'); calibrate with a metrics report"},
        {"ici_link_efficiency", ParameterUnit::fraction, &Calibration::ici_link_efficiency, 0.832, 0.3, 1.0,
         "fraction of the topology's one-way link bandwidth that bandwidth-bound collectives reach",
         "calibrated on case v5e-allgather-y4-34MB, the one bandwidth-bound measured collective over ICI "
         "links (solving its time for the factor: 0.832, error +0.0%). The scaling book's v2 reduce-scatter "
         "(0.921 was a fit over both) runs between the two TensorCores of one v2 chip "
         "(devices per chip, docs/model.md), so it measures chip.intra_chip_bandwidth instead; one "
         "generation "
         "cannot say whether other generations reach the same fraction of their links. Left out one at a "
         "time with the one other case it moves by most of its change, the ViT-CIFAR all-reduce share on "
         "a v3: worst 34% (docs/validation.md, Fitted parameters)"},
        {"ici_hop_latency_factor", ParameterUnit::factor, &Calibration::ici_hop_latency_factor, 1.0, 0.0,
         20.0, "multiplies the topology's per-hop ICI latency (latency-bound collectives)",
         "1.0: the topology files give each generation's hop latency with its source"},
        {"collective_overhead", ParameterUnit::time, &Calibration::collective_overhead, 5e-6, 0.0, 1e-3,
         "fixed time per collective (launch and synchronisation), added to the closed-form time",
         "calibrated on case v5e-allgather-y4-small (scaling book: 8 us measured vs 3 us of hops). Left out "
         "one at a time with the ViT-CIFAR all-reduce share, the other case it moves: worst 34% "
         "(docs/validation.md, Fitted parameters)"},
        {"dcn_efficiency", ParameterUnit::fraction, &Calibration::dcn_efficiency, 0.8, 0.1, 1.0,
         "fraction of the per-chip DCN bandwidth that cross-slice collectives reach",
         "assumption: TCP/RDMA goodput about 80% of line rate; calibrate on a multislice profile"},
        {"slice_step_jitter", ParameterUnit::fraction, &Calibration::slice_step_jitter, 0.076, 0.0, 0.5,
         "standard deviation of one slice's step time, as a fraction of it: slices joined over DCN wait "
         "once a step for the slowest, E[max of S normal draws] deviations beyond the mean (stragglers)",
         "calibrated on cases V5E-128b-2x-v5e-256, V5E-128b-32x-v5e-256, V5E-128b-8x-v5e-256, "
         "V5E-16b-2x-v5e-256, V5E-16b-32x-v5e-256, V5E-16b-8x-v5e-256, V5E-32b-2x-v5e-256, "
         "V5E-32b-32x-v5e-256, V5E-32b-8x-v5e-256, V5E-64b-2x-v5e-256, V5E-64b-32x-v5e-256, "
         "V5E-64b-8x-v5e-256, V5P-1024b-2x-v5p-2048, V5P-1024b-2x-v5p-4096, V5P-128b-2x-v5p-256, "
         "V5P-128b-2x-v5p-512, V5P-256b-2x-v5p-1024, V5P-32b-2x-v5p-128, V5P-512b-2x-v5p-1024, "
         "V5P-64b-2x-v5p-128, maxtext-22b-fsdp-2x-v4-128, maxtext-22b-fsdp-4x-v4-128, "
         "maxtext-22b-fsdp-8x-v4-128 (the multislice rows of the MaxText READMEs: two to 32 slices of TPU "
         "v4, v5e and v5p, data parallel over DCN), by least squares over their step times (podsim "
         "calibrate --suite DIR --params slice_step_jitter over those 23 cases: 0.0756 +/- 0.0154): rms "
         "error 7.6%; left out one at a time each within 15.3% (V5E-128b-32x-v5e-256 15.3%, "
         "V5E-32b-32x-v5e-256 and V5E-32b-8x-v5e-256 14.9%, V5P-128b-2x-v5p-512 14.7%, the rest within "
         "13%). The one-slice twins and PaLM stay held out"},
        {"compile_time_base", ParameterUnit::time, &Calibration::compile_time_base, 5.0, 0.0, 3600.0,
         "fixed part of compiling the step program (reported apart from the step time)",
         "assumption: XLA compiles of small jitted steps take seconds; calibrate with a PyTorch/XLA metrics "
         "report (CompileTime) or JAX's compilation log"},
        {"compile_time_per_op", ParameterUnit::time, &Calibration::compile_time_per_op, 10e-3, 0.0, 10.0,
         "compile time per fused op of the step program",
         "assumption: tens of seconds to a few minutes for transformer steps of thousands of fusions; "
         "calibrate as compile_time_base"},
        // Host work of a whole run (sim/training_run, docs/whole-run.md). Graph size is counted in fused
        // ops of the program (IR nodes per fused op are folded into each per-op cost) and in tensors the
        // step syncs (parameters, gradients, optimizer state, outputs).
        {"trace_per_op_pytorch_xla", ParameterUnit::time, &Calibration::trace_per_op_pytorch_xla, 267e-6, 0.0,
         10e-3,
         "PyTorch/XLA lazy tracing (Python model code recording IR) per fused op of the program, every step",
         "calibrated on case 001-unit-train-steady (mmf UniT on PyTorch/XLA 1.9: 7.69 updates/s over the "
         "last 100 of 1,500 steps, a host-bound step), the one case that measures this rate: no "
         "leave-one-out. Fitted over the four UniT cases it moves, each left out is off by 16% to 62%: "
         "evaluation traces at another rate (docs/validation.md, Fitted parameters)"},
        {"hash_per_op_pytorch_xla", ParameterUnit::time, &Calibration::hash_per_op_pytorch_xla, 2e-6, 0.0,
         1e-3, "PyTorch/XLA graph hashing and compile-cache lookup at mark_step, per fused op",
         "assumption: a hash over the IR post-order, microseconds per fused op; calibrate with a trace"},
        {"post_order_per_op_pytorch_xla", ParameterUnit::time, &Calibration::post_order_per_op_pytorch_xla,
         2e-6, 0.0, 1e-3,
         "PyTorch/XLA RunPostOrder (collecting the graph's nodes and device data), per fused op",
         "assumption: same order as hashing (both walk the IR graph once); pytorch/xla issue 3434 names it "
         "beside FetchTensorData as what separates two executions"},
        {"fetch_per_tensor_pytorch_xla", ParameterUnit::time, &Calibration::fetch_per_tensor_pytorch_xla,
         4.185e-6, 0.0, 1e-3,
         "PyTorch/XLA FetchTensorData per synced tensor (resetting its IR value, creating its placeholder "
         "data)",
         "calibrated on case 002-bert-large-gap-before (pytorch/xla PR overlapping FetchTensorData: the gap "
         "between two executions of BERT-Large went from about 9 ms to about 2.5 ms), the one case that "
         "moves with it: no leave-one-out"},
        {"launch_per_execution_pytorch_xla", ParameterUnit::time,
         &Calibration::launch_per_execution_pytorch_xla, 2.5e-3, 0.0, 1.0,
         "PyTorch/XLA time between the end of one execution and the start of the next that no overlap "
         "setting "
         "hides (execution setup, argument handling)",
         "calibrated on case 002-bert-large-gap-after (about 2.5 ms with RunPostOrder and FetchTensorData "
         "both overlapped). With fetch_per_tensor_pytorch_xla, two parameters from the two gaps of that "
         "thread: no leave-one-out of the pair (docs/validation.md, Fitted parameters)"},
        {"trace_per_op_jax", ParameterUnit::time, &Calibration::trace_per_op_jax, 20e-6, 0.0, 10e-3,
         "JAX jit tracing and lowering per fused op, only when a new shape misses the jit cache",
         "assumption: tracing a transformer step of thousands of ops takes tens of ms; calibrate"},
        {"dispatch_per_executable_jax", ParameterUnit::time, &Calibration::dispatch_per_executable_jax, 50e-6,
         0.0, 10e-3, "JAX asynchronous dispatch of one compiled executable (C++ fast path)",
         "assumption: tens of microseconds per jitted call (JAX docs, 'Asynchronous dispatch'); calibrate"},
        {"dispatch_per_argument_jax", ParameterUnit::time, &Calibration::dispatch_per_argument_jax, 1e-6, 0.0,
         1e-3, "JAX dispatch cost per array argument (pytree flattening, buffer checks)",
         "assumption: about a microsecond per argument; calibrate"},
        {"transfer_latency", ParameterUnit::time, &Calibration::transfer_latency, 1e-3, 0.0, 1.0,
         "fixed time of one host<->device transfer (TransferFromServerTime, TransferToServerTime)",
         "assumption: about 1 ms per small transfer through the TPU runtime's client (XRT over gRPC on a TPU "
         "VM); calibrate with a metrics report's TransferFromServerTime"},
        {"transfer_per_mib", ParameterUnit::time, &Calibration::transfer_per_mib, 100e-6, 0.0, 1.0,
         "time per MiB moved between host and device",
         "assumption: about 10 GB/s host<->device (PCIe gen3 x16 class); calibrate"},
        {"cache_load_per_op", ParameterUnit::time, &Calibration::cache_load_per_op, 0.1e-3, 0.0, 1.0,
         "loading one program's executable from a persistent compilation cache, per fused op",
         "assumption: deserialising is a few percent of compiling; calibrate"},
        {"cpu_op_time", ParameterUnit::time, &Calibration::cpu_op_time, 1e-3, 0.0, 10.0,
         "running one op without an XLA lowering on the host, between its two transfers",
         "assumption: a millisecond for a small op; calibrate with a trace"},
    };
    return params;
}

Calibration Calibration::defaults() {
    Calibration c;
    for (const auto& p : calibration_parameters()) c.*(p.field) = p.default_value;
    return c;
}

double Calibration::attention_traffic(parallel::Framework framework, bool attention_dropout) const {
    // Eager attention modules with dropout on the weights (Hugging Face GPT-2's), traced by either
    // PyTorch/XLA mode; without dropout (Hugging Face Llama) the chain is the one podsim counts.
    return parallel::is_pytorch_xla(framework) && attention_dropout ? attention_traffic_pytorch_xla : 1.0;
}

double Calibration::mxu_shape_factor(MatmulShapeClass shape_class) const {
    switch (shape_class) {
        case MatmulShapeClass::small:
            return mxu_small_shape_factor;
        case MatmulShapeClass::medium:
            return mxu_medium_shape_factor;
        case MatmulShapeClass::large:
            return 1.0;
    }
    return 1.0;
}

double Calibration::host_overhead(parallel::Framework framework) const {
    return parallel::is_pytorch_xla(framework) ? host_overhead_pytorch_xla : host_overhead_jax;
}

const CalibrationParameter* find_calibration_parameter(std::string_view name) {
    for (const auto& p : calibration_parameters()) {
        if (p.name == name) return &p;
    }
    return nullptr;
}

std::vector<std::string> calibration_parameter_names() {
    std::vector<std::string> names;
    for (const auto& p : calibration_parameters()) names.emplace_back(p.name);
    return names;
}

}  // namespace podsim::cost
