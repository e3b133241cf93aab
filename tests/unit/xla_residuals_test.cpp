// The residuals podsim keeps for the backward, set against the ones XLA keeps for the same training
// steps: in a step compiled from JAX's `lax.scan` over the layers, the forward `while` returns them
// stacked over the layers (tests/data/xla-truth/hlo/*.hlo.txt.gz, JAX 0.11.2; README there). The
// comparison is by shape and dtype, per device, with unit dimensions dropped.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "parallel/partition.hpp"
#include "profile/measured_profile.hpp"
#include "support.hpp"
#include "workload/lower.hpp"
#include "workload/residuals.hpp"

using namespace podsim;

namespace {

using Shape = std::string;  // "bf16[8,2048,5632]": dtype and dimensions, unit dimensions dropped

// One entry of a tuple type: the element type and the dimensions, without the layout.
Shape normalise(std::string entry) {
    const auto open = entry.find('[');
    const auto close = entry.find(']');
    REQUIRE(open != std::string::npos);
    REQUIRE(close != std::string::npos);
    std::string dims = entry.substr(open + 1, close - open - 1);
    std::vector<std::string> kept;
    std::size_t start = 0;
    while (start <= dims.size() && !dims.empty()) {
        const auto comma = dims.find(',', start);
        std::string dim = dims.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (dim != "1") kept.push_back(dim);
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    return fmt::format("{}[{}]", entry.substr(0, open), fmt::join(kept, ","));
}

// The shapes of the tuple the `while` named `op_name` returns: the test-side reader of one
// instruction's result type in an HLO module's text (`%while.1 = (s32[], bf16[...]{...}, ...)
// while(...), ..., metadata={op_name="jit(train_step)/jvp()/while" ...}`).
std::vector<Shape> while_result(const std::string& text, const std::string& op_name) {
    const std::string marker = fmt::format("op_name=\"{}\"", op_name);
    std::size_t line_start = 0;
    while (line_start < text.size()) {
        std::size_t line_end = text.find('\n', line_start);
        if (line_end == std::string::npos) line_end = text.size();
        const std::string line = text.substr(line_start, line_end - line_start);
        line_start = line_end + 1;
        const auto call = line.find(") while(");
        if (call == std::string::npos || line.find(marker) == std::string::npos) continue;
        const auto open = line.find("= (");
        REQUIRE(open != std::string::npos);
        std::vector<Shape> shapes;
        std::string entry;
        int depth = 0;
        for (std::size_t i = open + 3; i < call; ++i) {
            const char c = line[i];
            if (c == '/' && line.compare(i, 2, "/*") == 0) {  // /*index=5*/
                i = line.find("*/", i) + 1;
                continue;
            }
            if (c == '{' || c == '[') ++depth;
            if (c == '}' || c == ']') --depth;
            if (c == ',' && depth == 0) {
                shapes.push_back(normalise(entry));
                entry.clear();
            } else if (c != ' ') {
                entry += c;
            }
        }
        shapes.push_back(normalise(entry));
        return shapes;
    }
    FAIL("no while named " << op_name);
    return {};
}

// A tensor of podsim's on one device: each extent as the partitioner sizes it.
Shape device_shape(const workload::Tensor& t, const run::RunSpec& spec) {
    const double samples =
        static_cast<double>(spec.training.global_batch) / static_cast<double>(spec.training.microbatches);
    const double data = static_cast<double>(spec.mesh.size_of("data"));
    const double fsdp = static_cast<double>(spec.mesh.ici_size_of("fsdp"));
    const double tensor = static_cast<double>(spec.mesh.ici_size_of("tensor"));
    std::vector<long> dims;
    for (int i = 0; i < t.rank; ++i) {
        const auto& e = t.dims[static_cast<std::size_t>(i)];
        double n = static_cast<double>(e.size);
        if (workload::per_sample(e.shard)) n = n * samples / (data * fsdp);
        if (e.shard == workload::Shard::tensor) n /= tensor;
        if (e.shard == workload::Shard::param) n /= fsdp * tensor;
        if (n != 1.0) dims.push_back(static_cast<long>(n));
    }
    const char* type = t.element_bytes == 4 ? "f32" : t.element_bytes == 2 ? "bf16" : "pred";
    return fmt::format("{}[{}]", type, fmt::join(dims, ","));
}

// The stacked fp32 layer parameters, per device: the scan passes them through its loop. The
// script's layer (tools/xla_truth.py): RMSNorm scales, q/k/v/o and a gated MLP for the Llama
// decoder; LayerNorm scales and biases, biased projections and one MLP input for GPT-2 and ViT.
std::vector<Shape> stacked_parameters(const run::RunSpec& spec) {
    const auto& m = spec.model;
    const long f = spec.mesh.ici_size_of("fsdp"), t = spec.mesh.ici_size_of("tensor");
    const long L = m.layers, d = m.d_model, H = m.heads, hd = m.head_dim, F = m.d_ff;
    const long KV = m.kv_heads;  // the model file's, or the heads (config/model.cpp)
    auto shape = [](std::vector<long> dims) {
        std::vector<long> kept;
        for (long x : dims)
            if (x != 1) kept.push_back(x);
        return fmt::format("f32[{}]", fmt::join(kept, ","));
    };
    std::vector<Shape> stacked = {shape({L, d}),
                                  shape({L, d}),
                                  shape({L, d / f, H / t, hd}),
                                  shape({L, d / f, KV / t, hd}),
                                  shape({L, d / f, KV / t, hd}),
                                  shape({L, H / t, hd, d / f})};
    if (m.experts > 1) {
        // The MoE layer's router gate and its experts' weights (layers/moe.py: wi_0, wi_1, wo).
        const long E = m.experts, Fe = m.moe_d_ff;
        stacked.push_back(shape({L, d / f, E}));
        stacked.push_back(shape({L, E, d / f, Fe / t}));
        stacked.push_back(shape({L, E, d / f, Fe / t}));
        stacked.push_back(shape({L, E, Fe / t, d / f}));
    } else {
        stacked.push_back(shape({L, d / f, F / t}));
        stacked.push_back(shape({L, F / t, d / f}));
        if (m.gated()) stacked.push_back(shape({L, d / f, F / t}));
    }
    if (m.bias) {
        for (int i = 0; i < 4; ++i) stacked.push_back(shape({L, d}));           // ln1/ln2 biases, bo, bo2
        stacked.push_back(shape({L, H / t, hd}));                               // bq
        for (int i = 0; i < 2; ++i) stacked.push_back(shape({L, KV / t, hd}));  // bk, bv
        stacked.push_back(shape({L, F / t}));                                   // bi
    }
    return stacked;
}

void remove_one(std::vector<Shape>& from, const Shape& shape) {
    auto it = std::find(from.begin(), from.end(), shape);
    REQUIRE_MESSAGE(it != from.end(), shape << " is not in the tuple");
    from.erase(it);
}

// A shape as its dtype and element count: podsim's MoE tensors flatten the tokens ([B x S, d],
// [E, B x C, d]) where the script's einsums keep [B, S, d] and [E, B, C, d].
Shape by_size(const Shape& s) {
    const auto open = s.find('[');
    long elements = 1;
    std::size_t at = open + 1;
    while (at < s.size() && s[at] != ']') {
        std::size_t end = at;
        while (end < s.size() && s[end] != ',' && s[end] != ']') ++end;
        elements *= std::stol(s.substr(at, end - at));
        at = s[end] == ',' ? end + 1 : end;
    }
    return fmt::format("{}{{{}}}", s.substr(0, open), elements);
}

// podsim's saved set of a middle layer: what its forward ops keep (its output is the next layer's
// input, the same shape as its own, which XLA stacks).
std::vector<Shape> layer_saved(const run::RunSpec& spec) {
    const workload::OpGraph graph = workload::lower_training_step(spec.model, spec.training);
    std::vector<Shape> saved;
    for (const auto& op : graph.ops()) {
        if (op.layer != 1 || op.phase != workload::Phase::forward) continue;
        for (const auto& t : op.saved) saved.push_back(device_shape(t, spec));
    }
    return saved;
}

struct Fixture {
    std::string hlo;     // tests/data/xla-truth/hlo/NAME.hlo.txt.gz
    std::string config;  // the validation case that describes the same step
};

void check_saved_set(const Fixture& fixture) {
    INFO(fixture.hlo);
    const run::RunSpec spec = test::load_config(fixture.config);
    const std::string text = profile::read_file_bytes(
        test::source_path("tests/data/xla-truth/hlo/" + fixture.hlo + ".hlo.txt.gz"));
    std::vector<Shape> tuple = while_result(text, "jit(train_step)/jvp()/while");
    // The loop counter, the carry (the layer input), the parameters passed through.
    REQUIRE(tuple.size() > 2);
    tuple.erase(tuple.begin(), tuple.begin() + 2);
    for (const auto& p : stacked_parameters(spec)) remove_one(tuple, p);
    // Loop-invariant operands: the broadcast causal mask and its fill (JAX's scan hoists them).
    workload::Residuals r(spec.model, spec.training);
    std::vector<Shape> invariants;
    for (const auto& t : r.loop_invariants()) invariants.push_back(device_shape(t, spec));
    // Grouped-query attention: XLA keeps the scores' values as [B, KV, G, S, S] (the query split in
    // groups, MaxText's apply_attention_dot); podsim's tensors (rank 4 at most) as [B, H, S, S].
    const bool grouped = spec.model.grouped_query();
    for (const auto& s : invariants) {
        if (!grouped) {
            remove_one(tuple, s);
            continue;
        }
        // (Among the values not stacked over the layers: a stack can hold as many elements.)
        const std::string stacked = fmt::format("[{},", spec.model.layers);
        auto it = std::find_if(tuple.begin(), tuple.end(), [&](const Shape& x) {
            return x.find(stacked) == std::string::npos && by_size(x) == by_size(s);
        });
        REQUIRE_MESSAGE(it != tuple.end(), s << " is not in the tuple");
        tuple.erase(it);
    }
    if (spec.model.experts > 1) {
        // The iotas the router's one-hots compare with (experts, and capacity slots plus the
        // dropped slot 0), hoisted out of the loop: s32 constants, no activation.
        remove_one(tuple, fmt::format("s32[{}]", spec.model.experts));
        remove_one(tuple, fmt::format("s32[{}]", spec.model.expert_capacity(spec.training.seq_len,
                                                                            spec.training.capacity_factor) +
                                                     1));
    }
    // What is left is stacked over the layers.
    std::vector<Shape> xla;
    const std::string layers = fmt::format("[{},", spec.model.layers);
    for (const auto& s : tuple) {
        const auto open = s.find('[');
        REQUIRE_MESSAGE(s.compare(open, layers.size(), layers) == 0, s << " is not stacked over the layers");
        xla.push_back(s.substr(0, open + 1) + s.substr(open + layers.size()));
    }
    std::vector<Shape> podsim = layer_saved(spec);
    if (spec.model.experts > 1 || grouped) {
        for (auto& x : xla) x = by_size(x);
        for (auto& x : podsim) x = by_size(x);
    }
    std::sort(xla.begin(), xla.end());
    std::sort(podsim.begin(), podsim.end());
    std::vector<Shape> only_podsim, only_xla;
    std::set_difference(podsim.begin(), podsim.end(), xla.begin(), xla.end(),
                        std::back_inserter(only_podsim));
    std::set_difference(xla.begin(), xla.end(), podsim.begin(), podsim.end(), std::back_inserter(only_xla));
    INFO("only podsim keeps: " << fmt::format("{}", fmt::join(only_podsim, " ")));
    INFO("only XLA keeps: " << fmt::format("{}", fmt::join(only_xla, " ")));
    CHECK(podsim == xla);
    // Without remat the mask is a residual (select's transpose reads it), held once, by layer 0.
    if (spec.training.remat == workload::Remat::none && !invariants.empty()) {
        const workload::OpGraph graph = workload::lower_training_step(spec.model, spec.training);
        bool held = false;
        for (const auto& op : graph.ops()) {
            if (op.layer != 0 || op.phase != workload::Phase::forward) continue;
            for (const auto& t : op.saved) held = held || (t.element_bytes == 1 && t.rank == 4);
        }
        CHECK(held);
    }
}

}  // namespace

TEST_CASE("podsim's saved set is the residual tuple of XLA's forward loop, fixture by fixture") {
    const std::string dir = "tests/validation/xla/";
    const std::vector<Fixture> fixtures = {
        {"tiny-minimal-dot", dir + "xla-tiny-minimal-dot.yaml"},
        {"1b-b8-none-dot", dir + "xla-1b-b8-none-dot.yaml"},
        {"1b-b8-full-dot", dir + "xla-1b-b8-full-dot.yaml"},
        {"1b-b8-minimal-dot", dir + "xla-1b-b8-minimal-dot.yaml"},
        {"1b-b8-minimal-flash", dir + "xla-1b-b8-minimal-flash.yaml"},
        {"7b-b1-full-flash", dir + "xla-7b-b1-full-flash.yaml"},
        {"7b-b2-full-flash", dir + "xla-7b-b2-full-flash.yaml"},
        {"7b-b4-minimal-flash", dir + "xla-7b-b4-minimal-flash.yaml"},
        {"1b-b8-saveqkv-flash", dir + "xla-1b-b8-saveqkv-flash.yaml"},
        {"1b-b8-exceptwi-flash", dir + "xla-1b-b8-exceptwi-flash.yaml"},
        {"1b-b8-none-flash", dir + "xla-1b-b8-none-flash.yaml"},
        {"1b-b8-full-flash", dir + "xla-1b-b8-full-flash.yaml"},
        {"1b-b4-none-dot-s4096", dir + "xla-1b-b4-none-dot-s4096.yaml"},
        {"1b-b8-qkvoffload-flash", dir + "xla-1b-b8-qkvoffload-flash.yaml"},
        {"1b-b8-qkvoffload-dot", dir + "xla-1b-b8-qkvoffload-dot.yaml"},
        {"gpt2-xl-b8-minimal-flash", dir + "xla-gpt2-xl-b8-minimal-flash.yaml"},
        {"gpt2-xl-b4-none-dot", dir + "xla-gpt2-xl-b4-none-dot.yaml"},
        {"gpt2-2b-b8-full-flash", dir + "xla-gpt2-2b-b8-full-flash.yaml"},
        {"vit-b16-b256-none-dot", dir + "xla-vit-b16-b256-none-dot.yaml"},
        {"gpt2-xl-b8-saveqkv-dot", dir + "xla-gpt2-xl-b8-saveqkv-dot.yaml"},
        {"gpt2-2b-b4-none-flash", dir + "xla-gpt2-2b-b4-none-flash.yaml"},
        {"7b-b2-exceptwi-flash", dir + "xla-7b-b2-exceptwi-flash.yaml"},
        {"gpt2xl-b8-none-dot", dir + "xla-gpt2xl-b8-none-dot.yaml"},
        {"gpt2xl-b8-full-dot", dir + "xla-gpt2xl-b8-full-dot.yaml"},
        {"gpt2xl-b8-minimal-dot", dir + "xla-gpt2xl-b8-minimal-dot.yaml"},
        {"gpt2xl-b8-saveqkv-flash", dir + "xla-gpt2xl-b8-saveqkv-flash.yaml"},
        {"gpt2xl-b16-minimal-flash", dir + "xla-gpt2xl-b16-minimal-flash.yaml"},
        {"gpt2-2b-b8-none-flash", dir + "xla-gpt2-2b-b8-none-flash.yaml"},
        {"gpt2-2b-b8-full-dot", dir + "xla-gpt2-2b-b8-full-dot.yaml"},
        {"gpt2-2b-b16-none-dot", dir + "xla-gpt2-2b-b16-none-dot.yaml"},
        {"vit-b128-none-dot", dir + "xla-vit-b128-none-dot.yaml"},
        {"vit-b128-full-dot", dir + "xla-vit-b128-full-dot.yaml"},
        {"vit-b128-minimal-dot", dir + "xla-vit-b128-minimal-dot.yaml"},
        {"vit-b512-none-dot", dir + "xla-vit-b512-none-dot.yaml"},
        {"1b-b16-full-flash", dir + "xla-1b-b16-full-flash.yaml"},
        {"1b-b32-minimal-flash", dir + "xla-1b-b32-minimal-flash.yaml"},
        {"7b-b4-full-flash", dir + "xla-7b-b4-full-flash.yaml"},
        {"1b-b8-offload-flash", dir + "xla-1b-b8-offload-flash.yaml"},
        {"vit-b256-saveqkv-dot", dir + "xla-vit-b256-saveqkv-dot.yaml"},
        {"vit-b256-exceptwi-dot", dir + "xla-vit-b256-exceptwi-dot.yaml"},
        {"vit-b1024-full-dot", dir + "xla-vit-b1024-full-dot.yaml"},
        {"gpt2xl-b8-exceptwi-dot", dir + "xla-gpt2xl-b8-exceptwi-dot.yaml"},
        {"gpt2xl-b8-exceptmlp-flash", dir + "xla-gpt2xl-b8-exceptmlp-flash.yaml"},
        {"gpt2xl-b8-offload-dot", dir + "xla-gpt2xl-b8-offload-dot.yaml"},
        {"gpt2-2b-b8-minimal-flash", dir + "xla-gpt2-2b-b8-minimal-flash.yaml"},
        {"gpt2-2b-b32-full-flash", dir + "xla-gpt2-2b-b32-full-flash.yaml"},
        {"1b-b8-exceptmlp-flash", dir + "xla-1b-b8-exceptmlp-flash.yaml"},
        {"1b-b8-minimalflash-flash", dir + "xla-1b-b8-minimalflash-flash.yaml"},
        {"1b-b2-full-flash-s8192", dir + "xla-1b-b2-full-flash-s8192.yaml"},
        {"1b-b2-none-flash-s8192", dir + "xla-1b-b2-none-flash-s8192.yaml"},
        {"1b-b64-full-flash", dir + "xla-1b-b64-full-flash.yaml"},
        {"7b-b1-minimal-flash", dir + "xla-7b-b1-minimal-flash.yaml"},
        {"7b-b2-none-flash", dir + "xla-7b-b2-none-flash.yaml"},
        {"tiny-b16-none-dot", dir + "xla-tiny-b16-none-dot.yaml"},
        {"tiny-b8-full-flash", dir + "xla-tiny-b8-full-flash.yaml"},
        {"1b-b4-minimal-dot-s4096", dir + "xla-1b-b4-minimal-dot-s4096.yaml"},
        {"1b-geglu-b8-none-dot", dir + "xla-1b-geglu-b8-none-dot.yaml"},
        {"1b-geglu-b8-full-flash", dir + "xla-1b-geglu-b8-full-flash.yaml"},
        {"1b-geglu-b8-minimal-flash", dir + "xla-1b-geglu-b8-minimal-flash.yaml"},
        {"gpt2xl-relu-b8-none-dot", dir + "xla-gpt2xl-relu-b8-none-dot.yaml"},
        {"gpt2xl-relu-b8-full-dot", dir + "xla-gpt2xl-relu-b8-full-dot.yaml"},
        {"gpt2xl-relu-b8-minimal-flash", dir + "xla-gpt2xl-relu-b8-minimal-flash.yaml"},
        {"vit-relu-b256-none-dot", dir + "xla-vit-relu-b256-none-dot.yaml"},
        {"vit-relu-b256-minimal-dot", dir + "xla-vit-relu-b256-minimal-dot.yaml"},
        {"moe-b8-none-dot", dir + "xla-moe-b8-none-dot.yaml"},
        {"moe-b8-full-flash", dir + "xla-moe-b8-full-flash.yaml"},
        {"moe-b8-minimal-flash", dir + "xla-moe-b8-minimal-flash.yaml"},
        {"moe-b8-exceptwi-flash", dir + "xla-moe-b8-exceptwi-flash.yaml"},
        {"moe-b16-full-dot", dir + "xla-moe-b16-full-dot.yaml"},
        {"moe16k1-b8-minimal-flash", dir + "xla-moe16k1-b8-minimal-flash.yaml"},
        {"moe16k1-b8-none-flash", dir + "xla-moe16k1-b8-none-flash.yaml"},
        {"l32-kv8-b8-full-flash", dir + "xla-l32-kv8-b8-full-flash.yaml"},
        {"vitl-b128-none-dot", dir + "xla-vitl-b128-none-dot.yaml"},
        {"gemma-kv1-b4-full-flash", dir + "xla-gemma-kv1-b4-full-flash.yaml"},
        {"l32-kv8-b8-minimal-flash", dir + "xla-l32-kv8-b8-minimal-flash.yaml"},
        {"vitl-b256-full-dot", dir + "xla-vitl-b256-full-dot.yaml"},
        {"gemma-kv1-b2-none-dot", dir + "xla-gemma-kv1-b2-none-dot.yaml"},
        {"l32-kv8-b8-none-flash", dir + "xla-l32-kv8-b8-none-flash.yaml"},
        {"vitl-b256-minimal-dot", dir + "xla-vitl-b256-minimal-dot.yaml"},
        {"l32-kv8-b8-saveqkv-dot", dir + "xla-l32-kv8-b8-saveqkv-dot.yaml"},
        {"gpt2xl-b32-s512-none-flash", dir + "xla-gpt2xl-b32-s512-none-flash.yaml"},
        {"gemma-kv1-b4-minimal-flash", dir + "xla-gemma-kv1-b4-minimal-flash.yaml"},
        {"1b-kv4-b8-minimal-dot", dir + "xla-1b-kv4-b8-minimal-dot.yaml"},
        {"vitl-b128-saveqkv-dot", dir + "xla-vitl-b128-saveqkv-dot.yaml"},
        {"l32-kv8-b16-exceptwi-flash", dir + "xla-l32-kv8-b16-exceptwi-flash.yaml"},
        {"7b-kv8-b2-full-flash", dir + "xla-7b-kv8-b2-full-flash.yaml"},
        {"tiny-kv1-b8-minimal-dot", dir + "xla-tiny-kv1-b8-minimal-dot.yaml"},
        {"l32-kv8-b2-none-dot", dir + "xla-l32-kv8-b2-none-dot.yaml"},
        {"1b-kv4-b4-none-dot", dir + "xla-1b-kv4-b4-none-dot.yaml"},
        {"l32t-kv8-b8-full-flash", dir + "xla-l32t-kv8-b8-full-flash.yaml"},
        {"l32t-kv8-b8-minimal-flash", dir + "xla-l32t-kv8-b8-minimal-flash.yaml"},
        {"l32t-kv8-b4-none-flash", dir + "xla-l32t-kv8-b4-none-flash.yaml"},
        {"gemmat-kv1-b4-full-flash", dir + "xla-gemmat-kv1-b4-full-flash.yaml"},
        {"gemmat-kv1-b4-minimal-dot", dir + "xla-gemmat-kv1-b4-minimal-dot.yaml"},
        {"vitl-b512-full-dot", dir + "xla-vitl-b512-full-dot.yaml"},
        {"1b-b4-full-flash", dir + "xla-1b-b4-full-flash.yaml"},
        {"1b-b12-full-flash", dir + "xla-1b-b12-full-flash.yaml"},
        {"1b-b24-full-flash", dir + "xla-1b-b24-full-flash.yaml"},
        {"1b-b32-full-flash", dir + "xla-1b-b32-full-flash.yaml"},
        {"tiny-b1-minimal-dot", dir + "xla-tiny-b1-minimal-dot.yaml"},
        {"tiny-b4-minimal-dot", dir + "xla-tiny-b4-minimal-dot.yaml"},
        {"tiny-b8-minimal-dot", dir + "xla-tiny-b8-minimal-dot.yaml"},
        {"tiny-b2-full-dot", dir + "xla-tiny-b2-full-dot.yaml"},
        {"tiny-b2-minimal-flash", dir + "xla-tiny-b2-minimal-flash.yaml"},
        {"tiny-b2-minimal-dot-s1024", dir + "xla-tiny-b2-minimal-dot-s1024.yaml"},
        {"spmd-tiny-fsdp16", dir + "spmd/xla-spmd-tiny-fsdp16.yaml"},
        {"spmd-7b-fsdp16-full", dir + "spmd/xla-spmd-7b-fsdp16-full.yaml"},
        {"spmd-7b-fsdp16-minimal", dir + "spmd/xla-spmd-7b-fsdp16-minimal.yaml"},
        {"spmd-7b-fsdp4-tp4-minimal", dir + "spmd/xla-spmd-7b-fsdp4-tp4-minimal.yaml"},
        {"spmd-1b-fsdp16-none", dir + "spmd/xla-spmd-1b-fsdp16-none.yaml"},
        {"spmd-1b-fsdp16-saveqkv", dir + "spmd/xla-spmd-1b-fsdp16-saveqkv.yaml"},
        {"spmd-1b-fsdp8-tp2-full", dir + "spmd/xla-spmd-1b-fsdp8-tp2-full.yaml"},
    };
    // (1b-b8-minimal-dot-unrolled has no loop: its layers are unrolled, so there is no tuple.)
    for (const auto& f : fixtures) check_saved_set(f);
}

TEST_CASE("without remat an MoE layer keeps the router's masks and statistics") {
    // What the saved-set test above finds in XLA's tuples of the two MoE steps without remat, besides
    // the layer's other residuals, counted here from the shapes: the one-hot of each token's capacity
    // slot cast to bf16, [B, S, E, C + 1] (the multiply that builds the combine mask reads it for the
    // probabilities' gradient); the dispatch mask as pred [B, S, E, C] (the dispatch einsum's input
    // gradient); the kept-expert mask cast to bf16, [B, S, E]; the softmax's fp32 probabilities
    // [B, S, E] and two row statistics [B, S] (docs/model.md, "Mixture of experts").
    const std::string dir = "tests/validation/xla/";
    for (const char* name : {"xla-moe-b8-none-dot.yaml", "xla-moe16k1-b8-none-flash.yaml"}) {
        INFO(name);
        const run::RunSpec spec = test::load_config(dir + name);
        const long B = spec.training.global_batch, S = spec.training.seq_len, E = spec.model.experts;
        const long C = spec.model.expert_capacity(S, spec.training.capacity_factor);
        std::vector<Shape> saved = layer_saved(spec);
        for (auto& x : saved) x = by_size(x);
        for (const Shape& router :
             {fmt::format("bf16{{{}}}", B * S * E * (C + 1)), fmt::format("pred{{{}}}", B * S * E * C),
              fmt::format("bf16{{{}}}", B * S * E), fmt::format("f32{{{}}}", B * S * E),
              fmt::format("f32{{{}}}", B * S)})
            CHECK_MESSAGE(std::count(saved.begin(), saved.end(), router) > 0, router);
        CHECK(std::count(saved.begin(), saved.end(), fmt::format("f32{{{}}}", B * S)) >= 2);
    }
}

TEST_CASE("per device against the SPMD fixtures, which XLA:CPU compiled with fp32 weight gathers") {
    // tests/data/xla-truth/spmd.jsonl: XLA:CPU gathers the fp32 FSDP weights and casts after the
    // gather; podsim gathers bf16, as XLA:TPU does (docs/model.md, "Gathered weights"). So podsim is
    // below XLA:CPU's per-device memory, by what the wider gathers (and the unsplit LM head) take.
    for (const std::string name :
         {"spmd-tiny-fsdp16", "spmd-7b-fsdp16-full", "spmd-7b-fsdp16-minimal", "spmd-7b-fsdp4-tp4-minimal",
          "spmd-1b-fsdp16-none", "spmd-1b-fsdp16-saveqkv", "spmd-1b-fsdp8-tp2-full"}) {
        CAPTURE(name);
        const auto spec = test::load_config("tests/validation/xla/spmd/xla-" + name + ".yaml");
        const auto measured =
            profile::read_profile(test::source_path("tests/data/xla-truth/spmd.jsonl") + "#" + name);
        REQUIRE(measured.xla_memory);
        const double error = run::simulate(spec).memory.peak_bytes / measured.xla_memory->peak() - 1.0;
        CHECK(error < 0.0);
        CHECK(error > -0.12);
    }
}

namespace {

// Bytes of the stacked entries ([layers, ...]) of the tuple a `while` named `op_name` returns, by
// element type: "bf16" and "f32".
std::map<std::string, double> stacked_bytes(const std::string& text, const std::string& op_name,
                                            long layers) {
    std::map<std::string, double> bytes;
    const std::string stacked = fmt::format("[{},", layers);
    for (const auto& s : while_result(text, op_name)) {
        const auto open = s.find('[');
        if (s.compare(open, stacked.size(), stacked) != 0) continue;
        const std::string type = s.substr(0, open);
        double n = type == "f32" ? 4.0 : type == "bf16" ? 2.0 : 1.0;
        std::size_t start = open + 1;
        while (start < s.size()) {
            const auto end = s.find_first_of(",]", start);
            n *= std::stod(s.substr(start, end - start));
            start = end + 1;
        }
        bytes[type] += n;
    }
    return bytes;
}

}  // namespace

// The one step XLA dumped whole (tests/data/xla-truth/dump-1b-b8-minimal-flash): what its heap
// holds, set against podsim's breakdown at its peak.
TEST_CASE("the temporaries and the peak of the dumped 1B step, against XLA's buffer assignment") {
    const auto spec = test::load_config("tests/validation/xla/xla-1b-b8-minimal-flash.yaml");
    const std::string dir = "tests/data/xla-truth/dump-1b-b8-minimal-flash/";
    const std::string report = profile::read_file_bytes(test::source_path(dir + "memory-usage-report.txt"));
    const std::string assignment = profile::read_file_bytes(test::source_path(dir + "buffer-assignment.txt"));
    const std::string hlo =
        profile::read_file_bytes(test::source_path(dir + "after_optimizations.hlo.txt.gz"));
    constexpr double kGiB = 1024.0 * 1024 * 1024;

    // The heap's total is what memory_analysis() reports as the peak (gpu.jsonl: 27,450,846,420).
    REQUIRE(report.find("Total bytes: 27450846420") != std::string::npos);
    // The arguments: the allocations of entry parameters (parameters, AdamW's moments, the tokens).
    double arguments = 0.0;
    for (std::size_t at = assignment.find("allocation "); at != std::string::npos;
         at = assignment.find("\nallocation ", at + 1)) {
        const auto line_end = assignment.find('\n', at + 1);
        const std::string line = assignment.substr(at, line_end - at);
        if (line.find(", parameter ") == std::string::npos) continue;
        const auto size_at = line.find("size ") + 5;
        arguments += std::stod(line.substr(size_at, line.find(',', size_at) - size_at));
    }
    // The residual stacks: the bf16 outputs of the forward loop stacked over the layers. The
    // gradient accumulators: the fp32 stacks the backward loop takes, less the fp32 parameters
    // it passes through (the same bytes as the accumulators: one fp32 value per parameter).
    const long layers = spec.model.layers;
    const auto forward = stacked_bytes(hlo, "jit(train_step)/jvp()/while", layers);
    const auto backward = stacked_bytes(hlo, "jit(train_step)/transpose(jvp())/while", layers);
    const double residual_stacks = forward.at("bf16");
    const double stacked_params = forward.at("f32");  // the forward loop passes the parameters through
    const double accumulators = backward.at("f32") - stacked_params;
    CHECK(backward.at("bf16") == residual_stacks);  // the backward loop holds every residual stack
    CHECK(residual_stacks / kGiB == doctest::Approx(10.5));

    const auto sim = run::simulate(spec);
    const auto& m = sim.report.memory;
    INFO("podsim peak op " << m.peak_op);
    // Arguments: podsim's parameters and optimizer state (the 64 KiB of tokens aside).
    CHECK((m.params_bytes + m.optimizer_bytes) / arguments == doctest::Approx(1.0).epsilon(0.001));
    // XLA's stacks and accumulators coexist only in the backward loop, so its peak is there: so is
    // podsim's, inside a layer's backward, with the whole gradient accumulators live.
    REQUIRE(sim.memory.peak_op >= 0);
    const auto& peak_op = sim.program.ops[static_cast<std::size_t>(sim.memory.peak_op)];
    CHECK(peak_op.layer >= 0);
    CHECK(peak_op.phase != workload::Phase::forward);
    CHECK(m.grads_bytes / accumulators == doctest::Approx(1.0).epsilon(0.01));
    // The residual stacks: podsim's saved sets of all layers, byte for byte.
    double saved = 0.0;
    for (const auto& op : sim.program.ops)
        if (op.kept_for_backward && op.layer >= 0) saved += op.saved_bytes;
    CHECK(saved / residual_stacks == doctest::Approx(1.0).epsilon(0.001));
    // What is left of XLA's heap besides the state, the stacks and the accumulators: the backward
    // loop body's own values (the layer's rebuilt SwiGLU internals, the attention's recomputed
    // output and gradients, cuDNN's workspace), the loss's, and the heap's packing. podsim's: the
    // recomputed residuals of the layer in its backward and the temporaries.
    const double xla_rest = 27450846420.0 - arguments - residual_stacks - accumulators;
    const double podsim_rest = m.activations_bytes - residual_stacks + m.temporaries_bytes +
                               m.collective_buffers_bytes + m.gathered_weights_bytes;
    MESSAGE(
        fmt::format("XLA: arguments {:.2f}, residual stacks {:.2f}, accumulators {:.2f}, rest {:.2f} GiB; "
                    "podsim at {}: state {:.2f}, residuals {:.2f}, gradients {:.2f}, rest {:.2f} GiB",
                    arguments / kGiB, residual_stacks / kGiB, accumulators / kGiB, xla_rest / kGiB, m.peak_op,
                    (m.params_bytes + m.optimizer_bytes) / kGiB, m.activations_bytes / kGiB,
                    m.grads_bytes / kGiB, podsim_rest / kGiB));
    // Within the suite's budget for the whole peak (5 % of XLA's).
    CHECK(std::fabs(podsim_rest - xla_rest) <= 0.05 * 27450846420.0);
}

namespace {

// The body of the backward `while` (the scan's transpose) in an HLO module's text.
std::vector<std::string> backward_body(const std::string& text) {
    const std::string marker = "op_name=\"jit(train_step)/transpose(jvp())/while\"";
    std::string body;
    std::size_t start = 0;
    while (start < text.size() && body.empty()) {
        std::size_t end = text.find('\n', start);
        if (end == std::string::npos) end = text.size();
        const std::string line = text.substr(start, end - start);
        start = end + 1;
        const auto at = line.find("body=%");
        if (line.find(") while(") == std::string::npos || line.find(marker) == std::string::npos ||
            at == std::string::npos)
            continue;
        body = line.substr(at + 6, line.find(',', at) - at - 6);
    }
    REQUIRE(!body.empty());
    const auto open = text.find("\n%" + body + " (");
    REQUIRE(open != std::string::npos);
    const auto close = text.find("\n}", open);
    std::vector<std::string> lines;
    std::size_t at = text.find('\n', open + 1) + 1;
    while (at < close) {
        const std::size_t end = text.find('\n', at);
        lines.push_back(text.substr(at, end - at));
        at = end + 1;
    }
    return lines;
}

// How many arrays of `elements` elements an instruction's result type holds.
int arrays_of(const std::string& line, long elements) {
    const auto eq = line.find(" = ");
    if (eq == std::string::npos) return 0;
    std::size_t end = line.find(' ', eq + 3);
    if (line.compare(eq + 3, 1, "(") == 0) {  // a tuple: up to its closing parenthesis
        int depth = 0;
        for (end = eq + 3; end < line.size(); ++end) {
            if (line[end] == '(') ++depth;
            if (line[end] == ')' && --depth == 0) break;
        }
    }
    const std::string type = line.substr(eq + 3, end - eq - 3);
    int count = 0;
    for (std::size_t open = type.find('['); open != std::string::npos; open = type.find('[', open + 1)) {
        const auto close = type.find(']', open);
        if (close == open + 1) continue;  // a scalar
        long n = 1;
        for (std::size_t at = open + 1; at < close;) {
            const std::size_t comma = std::min(type.find(',', at), close);
            n *= std::stol(type.substr(at, comma - at));
            at = comma + 1;
        }
        if (n == elements) ++count;
    }
    return count;
}

}  // namespace

TEST_CASE("a rebuilt GELU holds its pre-activation and tanh, as XLA's backward loop writes them") {
    // docs/model.md, "Rebuilt values": in the backward `while` of a step with remat, XLA writes the
    // up-projection's dot output, tanh and the down projection's input gradient, then one fusion
    // with the GELU derivative and gelu(a) as outputs; the other internals, and the LayerNorms'
    // fp32 values, are never written.
    for (const std::string name : {"vit-b128-full-dot", "gpt2xl-b8-full-dot", "gpt2-2b-b8-full-dot"}) {
        INFO(name);
        const run::RunSpec spec = test::load_config("tests/validation/xla/xla-" + name + ".yaml");
        const auto& m = spec.model;
        const long tokens =
            static_cast<long>(spec.training.global_batch) * m.tokens_per_sample(spec.training.seq_len);
        const std::string text =
            profile::read_file_bytes(test::source_path("tests/data/xla-truth/hlo/" + name + ".hlo.txt.gz"));
        int written = 0, wide_fp32 = 0;
        for (const auto& line : backward_body(text)) {
            if (line.find(" get-tuple-element(") != std::string::npos ||
                line.find(" bitcast(") != std::string::npos || line.find(" parameter(") != std::string::npos)
                continue;
            const int arrays = arrays_of(line, tokens * m.d_ff);
            if (arrays >= 2) break;  // the derivative's fusion
            written += arrays;
            if (line.find(fmt::format("= f32[{},{},{}]", spec.training.global_batch,
                                      m.tokens_per_sample(spec.training.seq_len), m.d_model)) !=
                std::string::npos)
                ++wide_fp32;
        }
        // podsim: the recompute copies of the last layer, and the down projection's input gradient.
        const workload::OpGraph graph = workload::lower_training_step(m, spec.training);
        int rebuilt = 0, rebuilt_wide_fp32 = 0;
        const std::string f = fmt::format("bf16[{},{},{}]", spec.training.global_batch,
                                          m.tokens_per_sample(spec.training.seq_len), m.d_ff);
        const std::string wide = fmt::format("f32[{},{},{}]", spec.training.global_batch,
                                             m.tokens_per_sample(spec.training.seq_len), m.d_model);
        for (const auto& op : graph.ops()) {
            if (op.layer != m.layers - 1 || op.phase != workload::Phase::recompute) continue;
            for (const auto& t : op.saved) {
                if (op.name.find("mlp_up") != std::string::npos && device_shape(t, spec) == f) ++rebuilt;
                if (device_shape(t, spec) == wide) ++rebuilt_wide_fp32;
            }
        }
        // XLA: a, tanh and g (the down projection's input gradient) before the derivative's fusion,
        // which writes gelu(a). podsim: the recompute copy holds a, tanh and gelu(a) (its output);
        // g is the down projection's backward output. JAX's rules would hold five.
        CHECK(written + 1 == rebuilt + 1);
        CHECK(wide_fp32 == 0);
        CHECK(rebuilt_wide_fp32 == 0);
    }
}
