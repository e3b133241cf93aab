#include "config/schema.hpp"

#include <fmt/format.h>

#include "cost/calibration.hpp"

namespace podsim::config {

const std::vector<KeyDoc>& run_schema() {
    static const std::vector<KeyDoc> keys = {
        {"schema", "string", "(required)", "must be podsim.run/v1"},
        {"name", "string", "file name", "name shown in reports"},
        {"description", "string", "", "free text"},
        {"notes", "string", "", "free text"},
        {"model", "name | path | mapping", "(required)",
         "a name in models/, a path relative to this file, or an inline podsim.model/v1 mapping"},
        {"topology", "name | path | mapping", "(required)",
         "a name in topologies/, a path relative to this file, or an inline podsim.topology/v1 mapping"},
        {"slice", "shape", "(required)", "physical shape of one slice in chips, e.g. 2x2x1 or 4x4x8"},
        {"slices", "int", "1", "slices joined over DCN"},
        {"twisted_torus", "bool", "false",
         "twisted wraparound for n x n x 2n and n x 2n x 2n slices where the topology allows it"},
        {"mesh", "mapping", "(required)",
         "logical axes: shorthand {fsdp: 4} for one slice, or {ici: {...}, dcn: {...}}; axis names data, "
         "fsdp, "
         "tensor; one size per level may be auto"},
        {"mesh.ici", "mapping", "(required in long form)",
         "axes inside a slice in order (last = most local); "
         "product = chips per slice"},
        {"mesh.dcn", "mapping", "{}", "axes across slices; product = slices (e.g. {data: 2})"},
        {"mesh.mapping", "mapping", "create_device_mesh",
         "explicit placement of ICI axes on torus dimensions, e.g. {tensor: [z], fsdp: [x, y]}"},
        {"training", "mapping", "(required)", "batch, sequence, dtypes, optimizer, remat"},
        {"training.global_batch", "int", "(required unless per_chip_batch)",
         "sequences or images per optimizer step"},
        {"training.per_chip_batch", "int", "", "sets global_batch = per_chip_batch x chips"},
        {"training.seq_len", "int", "(required for text models)", "tokens per sequence"},
        {"training.microbatches", "int", "1", "gradient accumulation steps per optimizer step"},
        {"training.dtype", "enum bf16|fp16|fp32|fp8|int8", "bf16", "compute (activation) dtype"},
        {"training.param_dtype", "enum bf16|fp16|fp32", "fp32",
         "master weights, gradients and optimizer state"},
        {"training.optimizer", "enum adam|adamw|adafactor|sgd", "adam", "optimizer (memory and update cost)"},
        {"training.remat",
         "enum none|full|save_dots|attention|minimal|save_dot_except_mlpwi|save_dot_except_mlp|save_qkv_proj|"
         "save_dot_with_context_except_mlp|minimal_flash|qkv_proj_offloaded|minimal_offloaded",
         "none",
         "rematerialisation policy; MaxText remat_policy names are accepted verbatim, each the JAX policy "
         "docs/model.md lists (minimal = checkpoint_dots_with_no_batch_dims)"},
        {"training.attention", "enum dot_product|mha|flash", "dot_product",
         "attention kernel (MaxText `attention`): dot_product (alias mha) writes the S x S scores to HBM; "
         "flash (splash attention on TPU, FlashAttention-2 on GPU) keeps them on chip and skips causal "
         "blocks"},
        {"training.master_dtype", "enum fp32|bf16", "(none)",
         "master copy of the parameters kept by the optimizer (e.g. fp32 with param_dtype bf16)"},
        {"training.tensor_sequence", "bool", "false",
         "sequence parallelism with tensor: all-gather/reduce-scatter instead of all-reduce"},
        {"runtime", "mapping", "{}", "how the framework runs the step"},
        {"runtime.framework", "enum jax|pytorch-xla", "jax", "default overlap and host behaviour"},
        {"runtime.async_collectives", "bool", "jax: true, pytorch-xla: false",
         "collectives overlap compute (start/done pairs) or block it"},
        {"runtime.host_overhead", "time", "calibration host_overhead_<framework>", "host time per step"},
        {"runtime.compile_time", "time", "calibration compile_time_base + compile_time_per_op x ops",
         "XLA compile time, reported apart from the step"},
        {"runtime.recompile_every_step", "bool", "false",
         "the graph changes every step, so every step pays the compile time on the host"},
        {"runtime.collective_matmul", "bool", "jax with async collectives: true, otherwise false",
         "XLA's collective matmul (async collective fusion): sequence-parallel gathers and reduce-scatters "
         "run in ring steps under their matmul (docs/model.md)"},
        {"runtime.host_init", "enum full|sharded", "pytorch-xla: full, jax: sharded",
         "full: every process builds the whole model in host RAM before sharding; sharded: deferred init"},
        {"runtime.prefetch_depth", "int", "1",
         "FSDP all-gathers issued this many parameter groups ahead (async)"},
        {"report", "mapping", "{}", "report options"},
        {"report.mfu_attention", "bool", "false",
         "count attention FLOPs in MFU (PaLM appendix B convention)"},
        {"calibration", "mapping | path", "{}",
         "overrides of cost-model parameters by name (see `podsim explain calibration`), or a "
         "podsim.calibration/v1 file"},
        {"whole_run", "mapping", "(none: one step)",
         "a run of many steps: host work, compile cache, transfers (podsim run prints the whole run)"},
        {"whole_run.train_steps", "int", "0", "training steps (forward, backward, optimizer)"},
        {"whole_run.log_every", "int", "0 (never)",
         "a host sync every k train steps (loss.item()): waits for the step, one device-to-host transfer"},
        {"whole_run.last_batch", "int", "0 (none)", "samples in a last, partial training batch: a new shape"},
        {"whole_run.seq_len", "mapping", "{distribution: fixed}", "the sequence length of each batch"},
        {"whole_run.seq_len.distribution", "enum fixed|uniform|normal|buckets", "fixed",
         "fixed: training.seq_len; uniform or normal: per sample, clipped to [min, max], the batch takes its "
         "longest; buckets: one of `buckets` per batch with `weights`"},
        {"whole_run.seq_len.min", "int", "(required for uniform, normal)", "shortest sample, tokens"},
        {"whole_run.seq_len.max", "int", "(required for uniform, normal)", "longest sample, tokens"},
        {"whole_run.seq_len.mean", "number", "(required for normal)", "mean sample length, tokens"},
        {"whole_run.seq_len.stddev", "number", "(required for normal)", "standard deviation, tokens"},
        {"whole_run.seq_len.buckets", "list of int", "",
         "lengths batches are padded up to (padding: bucket), or drawn from (distribution: buckets)"},
        {"whole_run.seq_len.weights", "list of number", "equal",
         "relative frequency of each bucket (distribution: buckets)"},
        {"whole_run.seq_len.padding", "enum none|bucket|max", "none",
         "none: each batch padded to its longest sample (a new program per new length); bucket: up to the "
         "next "
         "bucket; max: always max"},
        {"whole_run.eval", "mapping", "{}", "evaluation (forward only)"},
        {"whole_run.eval.every", "int", "0 (once, after training)", "train steps between evaluations"},
        {"whole_run.eval.steps", "int", "0", "forward-only steps per evaluation"},
        {"whole_run.eval.batch", "int", "training.global_batch", "samples per evaluation step"},
        {"whole_run.eval.last_batch", "int", "0 (none)",
         "samples in the last, partial batch of an evaluation"},
        {"whole_run.eval.accumulate", "enum none|device|host", "none",
         "where per-step results are gathered: device (a tensor that grows every step: a new program every "
         "step), host (device-to-host transfers every step)"},
        {"whole_run.eval.accumulated_tensors", "int", "1",
         "tensors accumulated per step (fields of the result)"},
        {"whole_run.eval.bytes_per_sample", "size", "4 B", "bytes per sample of each accumulated tensor"},
        {"whole_run.unlowered_ops", "int", "0",
         "ops without an XLA lowering per step: the graph is split around each, with a transfer each way"},
        {"whole_run.unlowered_bytes", "size", "4 KiB", "bytes each of them moves to the host and back"},
        {"whole_run.input", "mapping", "{}", "the input pipeline (a background loader)"},
        {"whole_run.input.host_time", "time", "0 s", "host time to prepare one batch"},
        {"whole_run.input.bytes", "size", "4 B per token (image: 4 B per pixel and channel)",
         "host-to-device bytes per batch"},
        {"whole_run.compile_cache", "enum process|persistent", "process",
         "process: every distinct program compiles once per process; persistent: loaded from a cache"},
        {"whole_run.overlap", "enum none|run_post_order|run_post_order_and_fetch", "run_post_order_and_fetch",
         "PyTorch/XLA host work overlapping the previous execution: none (before pytorch/xla PR 3457), "
         "RunPostOrder (PR 3457), RunPostOrder and FetchTensorData (the PR of seed 002; current releases)"},
        {"whole_run.steady_window", "int", "100", "last steps averaged for the steady-state figures"},
        {"whole_run.seed", "int", "1", "seed of the sequence-length draws"},
    };
    return keys;
}

const std::vector<KeyDoc>& model_schema() {
    static const std::vector<KeyDoc> keys = {
        {"schema", "string", "(required)", "must be podsim.model/v1"},
        {"name", "string", "(required)", "model name"},
        {"source", "string", "", "where the architecture comes from"},
        {"notes", "string", "", "free text"},
        {"family", "enum gpt2|decoder|encoder|vit", "(required)",
         "gpt2: learned positions, LayerNorm, GELU; decoder: causal LM (gated MLPs, GQA, parallel blocks); "
         "encoder: bidirectional; vit: patches, class token, classifier"},
        {"layers", "int", "(required)", "transformer blocks"},
        {"d_model", "int", "(required)", "hidden size"},
        {"heads", "int", "(required)", "attention (query) heads"},
        {"head_dim", "int", "d_model / heads", "size of one head"},
        {"kv_heads", "int", "heads", "key/value heads: 1 = multi-query, between 1 and heads = grouped-query"},
        {"d_ff", "int", "4 x d_model", "MLP width"},
        {"activation", "enum gelu|relu|swiglu|geglu", "gelu",
         "MLP activation; gated ones have three matrices"},
        {"vocab", "int", "(required for text)", "vocabulary size"},
        {"max_positions", "int", "(required with learned positions)", "positions of the learned table"},
        {"tied_embeddings", "bool", "true", "LM head shares the token embedding"},
        {"bias", "bool", "true", "biases in projections (and LayerNorm shift)"},
        {"parallel_block", "bool", "false", "attention and MLP side by side (PaLM)"},
        {"position", "enum learned|rope|relative|none", "gpt2/encoder/vit: learned, decoder: rope",
         "position encoding"},
        {"image_size", "int", "(vit)", "image side in pixels"},
        {"patch_size", "int", "(vit)", "patch side in pixels"},
        {"channels", "int", "3", "(vit) input channels"},
        {"num_classes", "int", "(vit)", "classifier outputs"},
    };
    return keys;
}

const std::vector<KeyDoc>& topology_schema() {
    static const std::vector<KeyDoc> keys = {
        {"schema", "string", "(required)", "must be podsim.topology/v1"},
        {"name", "string", "(required)", "topology name"},
        {"source", "string", "", "where the numbers come from (each number may also carry its own)"},
        {"notes", "string", "", "free text"},
        {"chip", "mapping", "(required)", "one chip"},
        {"chip.name", "string", "", "chip name"},
        {"chip.peak_flops", "mapping dtype -> compute rate", "(required: bf16)",
         "peak matmul rate per chip by operand dtype, e.g. {bf16: 275 TFLOP/s}"},
        {"chip.hbm_capacity", "size", "(required)", "HBM per chip"},
        {"chip.hbm_bandwidth", "bandwidth", "(required)", "HBM bandwidth per chip"},
        {"chip.mxu_tile", "int", "128", "systolic array side; matmul dimensions are padded to it"},
        {"chip.tensorcores", "int", "1", "TensorCores per chip (informational)"},
        {"chip.clock", "frequency", "", "clock (informational)"},
        {"ici", "mapping", "(required)", "inter-chip interconnect"},
        {"ici.dims", "int", "3", "torus dimensions"},
        {"ici.link_bandwidth", "bandwidth", "(required)", "one direction of one link"},
        {"ici.hop_latency", "time", "(required)", "latency per hop"},
        {"ici.wraparound", "enum always|none|whole_cubes_of_4|length_16", "always", "which dimensions wrap"},
        {"ici.max_slice", "shape", "(required)", "largest slice, e.g. 16x16x16"},
        {"ici.twisted_torus", "bool", "false", "twisted tori available for n x n x 2n shapes"},
        {"host", "mapping", "{}", "hosts"},
        {"host.chips_per_host", "int", "4", "chips attached to one host"},
        {"host.host_memory", "size", "", "RAM per host"},
        {"host.transfer_bandwidth_per_chip", "bandwidth", "",
         "HBM <-> host memory per chip and direction (PCIe DMA); what remat offload moves activations at"},
        {"dcn", "mapping", "{}", "data-center network between slices"},
        {"dcn.bandwidth_per_chip", "bandwidth", "", "what each chip can send across slices"},
        {"dcn.bandwidth_per_host", "bandwidth", "",
         "what each host's NICs send across slices; shared by its chips (instead of bandwidth_per_chip)"},
        {"dcn.latency", "time", "0 s", "latency per DCN transfer"},
    };
    return keys;
}

const std::vector<KeyDoc>& validation_case_schema() {
    static const std::vector<KeyDoc> keys = {
        {"schema", "string", "(required)", "must be podsim.validation/v1"},
        {"id", "string", "(required)", "case identifier"},
        {"source", "string", "(required)", "where the measurement was published, down to the table"},
        {"notes", "string", "", "what was measured and how the config was derived"},
        {"run", "mapping", "(required)", "the podsim.run/v1 config of the measured run"},
        {"measured", "mapping", "(required)",
         "measured values: step_time_s, mfu_6n, all_reduce_fraction, derived"},
        {"tolerance", "mapping", "(required)", "step_time_rel, all_reduce_fraction_abs"},
        {"expected_miss", "string", "", "why the model misses this case today; the case then must miss"},
    };
    return keys;
}

std::vector<std::string> keys_under(const std::vector<KeyDoc>& schema, std::string_view prefix) {
    std::vector<std::string> out;
    for (const auto& key : schema) {
        std::string_view p = key.path;
        if (prefix.empty()) {
            if (p.find('.') == std::string_view::npos) out.emplace_back(p);
        } else if (p.size() > prefix.size() + 1 && p.substr(0, prefix.size()) == prefix &&
                   p[prefix.size()] == '.' &&
                   p.substr(prefix.size() + 1).find('.') == std::string_view::npos) {
            out.emplace_back(p.substr(prefix.size() + 1));
        }
    }
    return out;
}

std::vector<std::string> explainable() {
    return {"run", "model", "topology", "calibration"};
}

std::string explain(std::string_view what) {
    std::string out;
    auto table = [&](const std::vector<KeyDoc>& keys, std::string_view title) {
        out += fmt::format("{}\n\n", title);
        for (const auto& k : keys) {
            out += fmt::format("  {:<26} {:<36} default: {}\n", k.path, k.type, k.default_value);
            out += fmt::format("  {:<26} {}\n", "", k.help);
        }
    };
    if (what == "run") {
        table(run_schema(), "podsim.run/v1 — a run config (configs/*.yaml)");
        out += "\nQuantities carry units: 275 TFLOP/s, 32 GiB, 1.2 TB/s, 45 GB/s, 1 us, 3 ms.\n";
    } else if (what == "model") {
        table(model_schema(), "podsim.model/v1 — an architecture (models/*.yaml)");
    } else if (what == "topology") {
        table(topology_schema(), "podsim.topology/v1 — chips and interconnect (topologies/*.yaml)");
        out += "\nAny number may be written as {value: 45 GB/s, source: \"where it comes from\"}.\n";
    } else if (what == "calibration") {
        out += "cost-model parameters — override in a run config's `calibration:` block\n\n";
        for (const auto& p : cost::calibration_parameters()) {
            const bool time = p.unit == cost::ParameterUnit::time;
            std::string value =
                time ? fmt::format("{:g} s", p.default_value) : fmt::format("{:g}", p.default_value);
            const char* unit = time ? "time" : p.unit == cost::ParameterUnit::factor ? "factor" : "fraction";
            out += fmt::format("  {:<28} {:<9} default: {}\n", p.name, unit, value);
            out += fmt::format("  {:<28} {}\n  {:<28} source: {}\n", "", p.help, "", p.source);
        }
    }
    return out;
}

}  // namespace podsim::config
