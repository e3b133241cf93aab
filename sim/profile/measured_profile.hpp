#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace podsim::profile {

// A measured profile reduced to what podsim can compare: device time per op category per step.
// Categories are podsim's (parallel::category_name): matmul, fusion, all-gather, reduce-scatter,
// all-reduce, all-to-all, collective-permute, copy, plus host (gaps between device work).
struct MeasuredOp {
    std::string name;
    std::string category;
    double total_s = 0.0;  // over the whole profile
    long occurrences = 0;
    double bytes = 0.0;  // collective message bytes, or HBM bytes accessed (XProf), when the profile says
    double flops = 0.0;  // when the compiler says (XProf)
    // Matmuls: the narrowest of m, n, k on one device (podsim traces; XProf ops with FLOPs and an
    // output shape). 0 when unknown.
    double narrowest_dim = 0.0;
};

// Device memory of one execution on one device as XLA's buffer assignment reserves it (a compiled
// HloProto): entry parameters (the sharded train state and the batch), temporaries (one heap
// whose size is the heap simulator's peak), outputs not aliased to parameters, constants.
struct XlaMemory {
    std::string module;
    double parameter_bytes = 0.0;
    double temp_bytes = 0.0;
    double output_bytes = 0.0;
    double constant_bytes = 0.0;
    int allocations = 0;
    double total_bytes() const { return parameter_bytes + temp_bytes + output_bytes + constant_bytes; }
    // From compiled.memory_analysis() (JSON lines): the compiler's own peak (0: the buffer
    // assignment's total is the peak), memory offloaded to the host, what the allocator granted and
    // whether the step ran (unknown for a module that was only compiled).
    double peak_bytes = 0.0;
    double host_temp_bytes = 0.0;
    double bytes_limit = 0.0;
    std::optional<bool> ran;
    double peak() const { return peak_bytes > 0.0 ? peak_bytes : total_bytes(); }
};

struct MeasuredProfile {
    std::string format;  // chrome-trace, xplane, hlo-op-stats, pod-viewer, pytorch-xla-metrics, hlo-proto
    std::string device;  // "gpu" or "tpu" when the format or its content says; empty when unknown
    std::string file;
    int steps = 1;                               // steps the totals cover
    double step_time_s = 0.0;                    // mean measured step, 0 when the profile has no step markers
    std::map<std::string, double> category_s;    // per step
    std::map<std::string, long> category_count;  // per step
    std::vector<MeasuredOp> ops;                 // largest first (at most 50)
    // Matmul time per step by narrowest dimension, and matmul time whose shape the profile omits.
    std::map<double, double> matmul_s_by_narrowest_dim;
    double matmul_unshaped_s = 0.0;
    std::vector<std::string> notes;  // e.g. "compiles every step"
    // Whole-profile sample counts and totals of PyTorch/XLA metrics (metrics reports, PT_XLA_DEBUG
    // logs): CompileTime, ExecuteTime, TransferFromServerTime, TransferToServerTime, MarkStep.
    std::map<std::string, double> metric_counts;
    std::map<std::string, double> metric_totals_s;
    std::map<std::string, int> metric_steps;  // the steps (MarkStep) each count covers
    std::optional<XlaMemory> xla_memory;      // compiled HloProto: XLA's own memory numbers
};

// Throws core::UserError for a bad profile: FILE: error: at byte OFFSET: message.
[[noreturn]] void profile_error(const std::string& path, std::size_t offset, const std::string& message);

// podsim's category for a measured op name (XLA HLO names, CUDA kernel names, NCCL kernels).
std::string classify_op(const std::string& name, const std::string& hint = "");

// A matmul's narrowest dimension from its HLO text ("%x = bf16[batch..., m, n]{1,0} ...") and its
// FLOPs (2·batch·m·n·k gives k); 0 when the text has no array result.
double matmul_narrowest_dim(const std::string& hlo_text, double flops);

// Per-step matmul time by shape class (cost/matmul_shape.hpp) on a chip with this MXU tile, keyed
// by class name; nullopt unless the profile gives the narrowest dimension of every matmul.
std::optional<std::map<std::string, double>> matmul_time_by_shape(const MeasuredProfile& profile,
                                                                  int mxu_tile);

// Reads any supported profile, by content: Chrome trace JSON (.json / .json.gz: TensorBoard trace
// viewer, PyTorch profiler, podsim --trace), XProf .xplane.pb, XProf pod_viewer JSON, HLO op stats
// CSV, PyTorch/XLA metrics report, a compiled XLA module (*.hlo.pb, its buffer assignment). Throws
// core::UserError with file and byte offset on bad input.
// PATH#ENTRY names one entry of a JSON-lines file (read_xla_memory_jsonl).
MeasuredProfile read_profile(const std::string& path);

MeasuredProfile read_chrome_trace(const std::string& path, const std::string& text);
MeasuredProfile read_xplane(const std::string& path, const std::string& bytes);
MeasuredProfile read_hlo_op_stats_csv(const std::string& path, const std::string& text);
MeasuredProfile read_pytorch_xla_metrics(const std::string& path, const std::string& text);
MeasuredProfile read_nvtx_projection_csv(const std::string& path, const std::string& text);
MeasuredProfile read_chakra_et(const std::string& path, const std::string& bytes);
MeasuredProfile read_hlo_proto(const std::string& path, const std::string& bytes);
// One entry of a JSON-lines file of compiled steps (tools/xla_truth.py: gpu.jsonl, spmd.jsonl), by
// its "name": XLA's memory_analysis() of the step and, when it was run, whether it fitted.
MeasuredProfile read_xla_memory_jsonl(const std::string& path, const std::string& bytes,
                                      const std::string& entry);

// The same profile with its totals spread over `steps` steps instead of the ones it reports (for
// formats without step markers, such as HLO op stats: `validate --steps N`).
MeasuredProfile with_steps(MeasuredProfile profile, int steps);

// Raw bytes of a file, gunzipped when it is gzip; throws core::UserError when unreadable.
std::string read_file_bytes(const std::string& path);

}  // namespace podsim::profile
