#include <doctest/doctest.h>

#include "config/load.hpp"
#include "core/assert.hpp"
#include "support.hpp"
#include "workload/lower.hpp"

using namespace podsim;
using workload::OpKind;
using workload::Phase;

namespace {
workload::ModelSpec model(const std::string& name) {
    return config::load_model_file(test::source_path("models/" + name + ".yaml"));
}
// FLOPs of a matmul in a step of `samples` per microbatch (the graph's batch extents count per sample).
double matmul_flops(const workload::Op& op, std::int64_t samples) {
    const auto& s = op.matmul;
    auto size = [samples](const workload::Extent& e) {
        return static_cast<double>(workload::step_size(e, samples));
    };
    return 2.0 * size(s.batch[0]) * size(s.batch[1]) * size(s.m) * size(s.n) * size(s.k);
}
}  // namespace

TEST_CASE("parameter counts match the published ones") {
    // Hugging Face num_parameters(): gpt2 124,439,808; Llama-2-7b 6,738,415,616; timm vit_base_patch16_224
    // 86,567,656.
    CHECK(workload::count_params(model("gpt2-small")).total == 124'439'808);
    CHECK(workload::count_params(model("llama2-7b")).total == 6'738'415'616);
    CHECK(workload::count_params(model("vit-b16")).total == 86'567'656);
    // GPT-2 2B: 18 x (12 d^2 + 13 d) + (50257 + 1024) d + 2 d, d = 3072.
    CHECK(workload::count_params(model("gpt2-2b")).total ==
          18LL * (12LL * 3072 * 3072 + 13 * 3072) + (50257LL + 1024) * 3072 + 2 * 3072);
}

TEST_CASE("forward matmul FLOPs of a GPT-2 layer and backward = 2 x forward") {
    auto m = model("gpt2-small");
    workload::TrainingSpec t;
    t.global_batch = 8;
    t.seq_len = 1024;
    t.remat = workload::Remat::none;
    auto g = workload::lower_training_step(m, t);
    const double T = 8.0 * 1024, d = 768, B = 8, S = 1024;
    // One layer: 2T(3d^2 + d^2 + 4d^2 + 4d^2) for the projections + 2 x 2 B S^2 d for scores and context.
    const double layer = 2 * T * 12 * d * d + 4 * B * S * S * d;
    double layer0 = 0, forward = 0, backward = 0, recompute = 0;
    for (const auto& op : g.ops()) {
        if (op.kind != OpKind::matmul) continue;
        double f = matmul_flops(op, 8);
        if (op.phase == Phase::forward) forward += f;
        if (op.phase == Phase::backward) backward += f;
        if (op.phase == Phase::recompute) recompute += f;
        if (op.phase == Phase::forward && op.layer == 0) layer0 += f;
    }
    CHECK(layer0 == doctest::Approx(layer));
    CHECK(backward == doctest::Approx(2 * forward));
    CHECK(recompute == 0.0);
    // Forward = layers + LM head (2 T d V).
    CHECK(forward == doctest::Approx(12 * layer + 2 * T * d * 50257));
}

TEST_CASE("remat full recomputes every layer's forward but its output, and keeps only layer outputs") {
    auto m = model("gpt2-small");
    workload::TrainingSpec t;
    t.global_batch = 8;
    t.seq_len = 1024;
    t.remat = workload::Remat::full;
    auto g = workload::lower_training_step(m, t);
    double forward_layers = 0, recompute = 0;
    int kept_in_layers = 0;
    for (const auto& op : g.ops()) {
        // The layer's last op (mlp_down) makes its output, which no backward op reads: XLA drops its
        // recompute as dead code, so podsim recomputes everything before it.
        const bool layer_output = op.name.ends_with("mlp_down");
        if (op.kind == OpKind::matmul && op.layer >= 0 && op.phase == Phase::forward && !layer_output)
            forward_layers += matmul_flops(op, 8);
        if (op.kind == OpKind::matmul && op.phase == Phase::recompute) recompute += matmul_flops(op, 8);
        if (op.layer >= 0 && op.phase == Phase::forward && op.kept_for_backward) ++kept_in_layers;
    }
    CHECK(recompute == doctest::Approx(forward_layers));
    CHECK(kept_in_layers == 12);  // one output per layer
    // The graph is a DAG whose topological order keeps every op after its inputs.
    auto order = g.topological_order();
    std::vector<int> position(order.size());
    for (std::size_t i = 0; i < order.size(); ++i)
        position[static_cast<std::size_t>(order[i])] = static_cast<int>(i);
    for (std::size_t v = 0; v < g.size(); ++v) {
        for (int p : g.predecessors(static_cast<int>(v)))
            CHECK(position[static_cast<std::size_t>(p)] < position[v]);
    }
}

TEST_CASE("ViT lowers patches, class token and classifier") {
    auto m = model("vit-cifar");
    CHECK(m.patches() == 64);
    CHECK(m.tokens_per_sample(0) == 65);
    workload::TrainingSpec t;
    t.global_batch = 128;
    auto g = workload::lower_training_step(m, t);
    bool has_patch = false, has_classifier = false;
    for (const auto& op : g.ops()) {
        if (op.name == "patch_embed") {
            has_patch = true;
            CHECK(op.matmul.m.size == 64);  // per image: the lowered graph does not depend on the batch
            CHECK(workload::step_size(op.matmul.m, 128) == 128 * 64);
            CHECK(op.matmul.k.size == 3 * 4 * 4);
        }
        if (op.name == "classifier") {
            has_classifier = true;
            CHECK(op.matmul.n.size == 10);
        }
    }
    CHECK(has_patch);
    CHECK(has_classifier);
    // 6 transformer layers + embedding + head.
    CHECK(g.param_groups.size() == 8);
}

TEST_CASE("optimizer state: Adam two moments, Adafactor factored") {
    workload::ParamGroup g{"w", 0, 1000 * 500 + 500, true, {{1000, 500}}};
    CHECK(workload::optimizer_state_bytes(g, workload::Optimizer::adam, core::DType::fp32) ==
          2.0 * 500500 * 4);
    // Row + column statistics for the matrix, full state for the 500 bias entries.
    CHECK(workload::optimizer_state_bytes(g, workload::Optimizer::adafactor, core::DType::fp32) ==
          (1500.0 + 500) * 4);
    CHECK(workload::optimizer_state_bytes(g, workload::Optimizer::sgd, core::DType::fp32) == 500500.0 * 4);
}

TEST_CASE("an op graph orders ops after their inputs, ties by insertion, and refuses a cycle") {
    workload::OpGraph graph;
    for (int i = 0; i < 4; ++i) graph.add_op(workload::Op{});
    graph.add_edge(2, 1);
    graph.add_edge(0, 3);
    graph.add_edge(2, 1);  // a repeated edge is one edge
    CHECK(graph.edge_count() == 2);
    // 0 and 2 are ready at the start and the smallest ready index runs first: 0 (which makes 3
    // ready), then 2 (which makes 1 ready), then 1 before 3.
    CHECK(graph.topological_order() == std::vector<int>{0, 2, 1, 3});
    CHECK(graph.predecessors_view(1).size() == 1);
    CHECK(graph.predecessors_view(1)[0] == 2);

    workload::OpGraph cyclic;
    for (int i = 0; i < 3; ++i) cyclic.add_op(workload::Op{});
    cyclic.add_edge(0, 1);
    cyclic.add_edge(1, 2);
    cyclic.add_edge(2, 1);
    CHECK_THROWS_AS(cyclic.topological_order(), core::InternalError);
}
