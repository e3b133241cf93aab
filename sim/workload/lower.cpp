#include "workload/lower.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>

#include <fmt/format.h>

#include "core/assert.hpp"

namespace podsim::workload {
namespace {

using I = std::int64_t;

Extent none(I n) {
    return Extent{n, Shard::none};
}
Extent batch(I n) {
    return Extent{n, Shard::batch};
}
Extent tensor(I n) {
    return Extent{n, Shard::tensor};
}
Extent expert(I n) {
    return Extent{n, Shard::expert};
}
Extent batch_no_expert(I n) {
    return Extent{n, Shard::batch_no_expert};
}

// Builds the graph; remembers, for each forward op, the op that last produced its output
// (the forward op itself, or its recompute copy) so that backward ops depend on the right one.
class Lowering {
  public:
    Lowering(const ModelSpec& model, const TrainingSpec& training)
        : m_(model),
          t_(training),
          a_(static_cast<int>(core::dtype_bytes(training.dtype))),
          p_(static_cast<int>(core::dtype_bytes(training.param_dtype))) {
        // Batch extents count per sample (Extent): batch(1) is one sequence (or image) and
        // batch(S_) its tokens, so the graph serves every batch.
        S_ = model.tokens_per_sample(training.seq_len);
    }

    OpGraph run() {
        make_param_groups();
        g_.layers = m_.layers;
        int x = embedding_forward();
        std::vector<int> layer_inputs;
        for (int l = 0; l < m_.layers; ++l) {
            layer_inputs.push_back(x);
            x = layer_forward(l, x);
        }
        int grad = head_forward_and_backward(x);
        for (int l = m_.layers - 1; l >= 0; --l) grad = layer_backward(l, grad);
        embedding_backward(grad);
        optimizer();
        return std::move(g_);
    }

  private:
    struct Forward {
        int index;                  // in the graph
        int producer;               // what the backward reads its inputs from
        std::array<int, 3> inputs;  // forward indices of the ops it reads, then -1
        int backward_reads = 3;     // its first inputs that its backward reads (a fused residual is not)
    };

    int embedding_group() const { return 0; }
    int layer_group(int l) const { return 1 + l; }
    int head_group() const { return 1 + m_.layers; }

    void make_param_groups() {
        ParamCount c = count_params(m_);
        const I d = m_.d_model;
        // Text models split the vocabulary over the tensor axis (Megatron's vocab-parallel
        // embedding and LM head).
        ParamGroup embed{"embedding", -1, c.embedding, !m_.is_vit(), {}};
        if (m_.is_vit()) {
            embed.matrices.push_back({static_cast<I>(m_.channels) * m_.patch_size * m_.patch_size, d});
        } else {
            embed.matrices.push_back({m_.vocab, d});
            if (m_.position == PositionEmbedding::learned) embed.matrices.push_back({m_.max_positions, d});
        }
        g_.param_groups.push_back(embed);
        for (int l = 0; l < m_.layers; ++l) {
            const bool moe = m_.is_moe_layer(l);
            ParamGroup layer{fmt::format("layer{}", l), l, moe ? c.per_moe_layer : c.per_layer, true, {}};
            layer.matrices = {{d, m_.attention_width() + 2 * m_.kv_width()}, {m_.attention_width(), d}};
            if (!moe) {
                layer.matrices.push_back({d, (m_.gated() ? 2 : 1) * static_cast<I>(m_.d_ff)});
                layer.matrices.push_back({m_.d_ff, d});
            } else {
                // The gate, then each routed and shared expert's up and down projections.
                const I ff = m_.moe_d_ff > 0 ? m_.moe_d_ff : m_.d_ff;
                layer.matrices.push_back({d, m_.experts});
                for (int e = 0; e < m_.experts + m_.shared_experts; ++e) {
                    layer.matrices.push_back({d, (m_.gated() ? 2 : 1) * ff});
                    layer.matrices.push_back({ff, d});
                }
                layer.expert_params = c.routed_experts_per_moe_layer;
            }
            g_.param_groups.push_back(layer);
        }
        ParamGroup head{"head", -1, c.head, false, {}};
        if (m_.is_vit()) head.matrices.push_back({d, m_.num_classes});
        if (!m_.is_vit() && !m_.tied_embeddings) head.matrices.push_back({d, m_.vocab});
        g_.param_groups.push_back(head);
    }

    void set_producer(int forward_index, int producer) {
        auto i = static_cast<std::size_t>(forward_index);
        if (producer_.size() <= i) producer_.resize(i + 1, -1);
        producer_[i] = producer;
    }

    int add(Op op, std::initializer_list<int> deps) {
        int index = g_.add_op(std::move(op));
        for (int d : deps) {
            if (d >= 0) g_.add_edge(d, index);
        }
        return index;
    }

    Tensor act(std::initializer_list<Extent> e) const { return Tensor::of(e, a_); }

    Op fusion(std::string name, int layer, std::vector<Tensor> reads, std::vector<Tensor> writes) const {
        Op op;
        op.name = std::move(name);
        op.kind = OpKind::fusion;
        op.layer = layer;
        op.reads = std::move(reads);
        op.writes = std::move(writes);
        return op;
    }

    // out[m, n] = in[m, k] x W[k, n]; W read in the compute dtype.
    Op weight_matmul(std::string name, int layer, int group, Extent m, Extent k, Extent n) const {
        Op op;
        op.name = std::move(name);
        op.kind = OpKind::matmul;
        op.layer = layer;
        op.param_group = group;
        op.matmul.m = m;
        op.matmul.n = n;
        op.matmul.k = k;
        op.weight_matmul = true;
        op.reads = {act({m, k}), act({k, n})};
        op.writes = {act({m, n})};
        return op;
    }

    // Per-head batched matmul of attention: [B, H] x (m x k) . (k x n).
    Op attention_matmul(std::string name, int layer, Extent m, Extent k, Extent n, I kv_heads) const {
        Op op;
        op.name = std::move(name);
        op.kind = OpKind::matmul;
        op.layer = layer;
        op.attention_internal = true;
        op.matmul.batch = {batch(1), tensor(m_.heads)};
        op.matmul.m = m;
        op.matmul.n = n;
        op.matmul.k = k;
        op.reads = {act({batch(1), tensor(m_.heads), m, k}), act({batch(1), tensor(kv_heads), k, n})};
        op.writes = {act({batch(1), tensor(m_.heads), m, n})};
        return op;
    }

    int forward(Op op, std::initializer_list<int> inputs, int backward_reads = 3) {
        op.phase = Phase::forward;
        int index = add(std::move(op), inputs);
        PODSIM_ASSERT(inputs.size() <= 3, "a forward op reads at most three others");
        Forward f{index, index, {-1, -1, -1}, backward_reads};
        std::copy(inputs.begin(), inputs.end(), f.inputs.begin());
        forwards_.push_back(f);
        return index;
    }

    int embedding_forward() {
        const I d = m_.d_model;
        if (m_.is_vit()) {
            I patch_in = static_cast<I>(m_.channels) * m_.patch_size * m_.patch_size;
            Op patch = weight_matmul("patch_embed", -1, embedding_group(), batch(m_.patches()),
                                     none(patch_in), none(d));
            patch.kept_for_backward = true;
            patch.backward = BackwardKind::no_input_gradient;
            int p = forward(std::move(patch), {});
            Op add_pos =
                fusion("embed_cls_pos", -1, {act({batch(m_.patches()), none(d)}), act({none(S_), none(d)})},
                       {act({batch(S_), none(d)})});
            add_pos.param_group = embedding_group();
            add_pos.kept_for_backward = true;
            return forward(std::move(add_pos), {p});
        }
        // Gather rows of the token table (and add learned positions).
        std::vector<Tensor> reads = {act({batch(S_), none(d)})};
        if (m_.position == PositionEmbedding::learned) reads.push_back(act({none(S_), none(d)}));
        Op embed = fusion("embed", -1, std::move(reads), {act({batch(S_), none(d)})});
        embed.param_group = embedding_group();
        embed.kept_for_backward = true;
        embed.backward = BackwardKind::scatter_to_table;
        return forward(std::move(embed), {});
    }

    int layer_forward(int l, int x) {
        const I d = m_.d_model;
        const I qkv_width = m_.attention_width() + 2 * m_.kv_width();
        const Extent T = batch(S_);
        const std::string p = fmt::format("layer{}.", l);
        const int group = layer_group(l);
        std::size_t first = forwards_.size();

        Op ln1 = fusion(p + "norm1", l, {act({T, none(d)})}, {act({T, none(d)})});
        ln1.param_group = group;
        int n1 = forward(std::move(ln1), {x});
        Op qkv_op = weight_matmul(p + "qkv", l, group, T, none(d), tensor(qkv_width));
        qkv_op.activation = ActivationName::qkv_proj;
        int qkv = forward(std::move(qkv_op), {n1});
        int context =
            t_.attention == Attention::flash ? flash_attention(p, l, qkv) : dot_attention(p, l, qkv);
        Op out = weight_matmul(p + "attn_out", l, group, T, tensor(m_.attention_width()), none(d));
        out.activation = ActivationName::out_proj;
        out.reads.push_back(act({T, none(d)}));  // residual add fused into the output
        int attn_out = forward(std::move(out), {context, x});

        int mlp_in = n1;
        if (!m_.parallel_block) {
            Op ln2 = fusion(p + "norm2", l, {act({T, none(d)})}, {act({T, none(d)})});
            ln2.param_group = group;
            mlp_in = forward(std::move(ln2), {attn_out});
        }
        int out_index;
        if (m_.is_moe_layer(l)) {
            out_index = moe_forward(p, l, group, mlp_in, attn_out);
        } else {
            const I up_width = (m_.gated() ? 2 : 1) * static_cast<I>(m_.d_ff);
            Op up = weight_matmul(p + "mlp_up", l, group, T, none(d), tensor(up_width));
            up.activation = ActivationName::mlpwi;
            up.writes = {act({T, tensor(m_.d_ff)})};  // activation (and gate product) fused in
            int mlp_up = forward(std::move(up), {mlp_in});
            Op down = weight_matmul(p + "mlp_down", l, group, T, tensor(m_.d_ff), none(d));
            down.activation = ActivationName::mlpwo;
            down.reads.push_back(act({T, none(d)}));  // residual
            out_index = forward(std::move(down), {mlp_up, attn_out});
        }

        decide_saved(first, out_index);
        layer_outputs_.push_back(out_index);
        layer_ranges_.push_back({first, forwards_.size()});
        return out_index;
    }

    // A matmul of an MoE layer: C[batch..., m, n] = A[batch..., m, k] x B[batch..., k, n], reading
    // `lhs` and `rhs` and writing `out`; with a parameter group, a weight matmul of that group.
    Op moe_matmul(std::string name, int l, int group, std::array<Extent, 2> batch_dims, Extent m, Extent k,
                  Extent n, Tensor lhs, Tensor rhs, Tensor out) const {
        Op op;
        op.name = std::move(name);
        op.kind = OpKind::matmul;
        op.layer = l;
        op.param_group = group;
        op.weight_matmul = group >= 0;
        op.matmul.batch = batch_dims;
        op.matmul.m = m;
        op.matmul.k = k;
        op.matmul.n = n;
        op.reads = {std::move(lhs), std::move(rhs)};
        op.writes = {std::move(out)};
        return op;
    }

    // Tokens on their way to their experts' chips or back (OpKind::exchange).
    Op exchange(std::string name, int l, Tensor in, Tensor out) const {
        Op op;
        op.name = std::move(name);
        op.kind = OpKind::exchange;
        op.layer = l;
        op.reads = {std::move(in)};
        op.writes = {std::move(out)};
        return op;
    }

    // Tokens an expert takes per sequence when it drops the rest (MaxText layers/moe.py
    // generate_masks): int(max(ceil(seq x k / E) x capacity_factor, capacity_factor)).
    I expert_capacity() const {
        const double tokens = static_cast<double>(S_) * m_.experts_per_token;
        const double per_expert = std::ceil(tokens / m_.experts);
        return static_cast<I>(std::max(per_expert * t_.capacity_factor, t_.capacity_factor));
    }

    // An MoE layer's MLP (MaxText layers/moe.py RoutedMoE, RoutedAndSharedMoE) on `in`, adding
    // `residual`: the shared experts, the router (gate logits, softmax and top-k, with the
    // load-balancing loss), then the routed experts as the training settings run them:
    //  - dropping (capacity_factor > 0, not sparse_matmul): one-hot dispatch and combine einsums
    //    around batched expert matmuls over E x capacity slots;
    //  - dropless (sparse_matmul): tokens sorted by expert, grouped matmuls, unsorted and weighted;
    //  - dense (neither): every expert on every token, weighted.
    // Tokens move to their experts' chips and back through exchange ops (all-to-all over the
    // expert axis). Returns the op producing the layer's output.
    int moe_forward(const std::string& p, int l, int group, int in, int residual) {
        const I d = m_.d_model, E = m_.experts, k = m_.experts_per_token;
        const I ff = m_.moe_d_ff > 0 ? m_.moe_d_ff : m_.d_ff;
        const I up_width = (m_.gated() ? 2 : 1) * ff;
        const Extent T = batch(S_);
        // Shared experts: one dense MLP of shared x ff, its down projection fusing the residual add.
        int base = residual;
        if (m_.shared_experts > 0) {
            const I shared = ff * m_.shared_experts;
            Op up =
                weight_matmul(p + "shared_up", l, group, T, none(d), tensor(up_width * m_.shared_experts));
            up.activation = ActivationName::mlpwi;
            up.writes = {act({T, tensor(shared)})};
            int shared_up = forward(std::move(up), {in});
            Op down = weight_matmul(p + "shared_down", l, group, T, tensor(shared), none(d));
            down.activation = ActivationName::mlpwo;
            down.reads.push_back(act({T, none(d)}));
            base = forward(std::move(down), {shared_up, residual});
        }
        Op gate = weight_matmul(p + "gate", l, group, T, none(d), none(E));
        int logits = forward(std::move(gate), {in});
        // Routing: softmax (fp32) and top-k over the logits; the load-balancing loss (Switch
        // Transformer) reads the top-k one-hot and the probabilities once more.
        std::vector<Tensor> route_reads = {act({T, none(E)})};
        if (t_.load_balance_loss_weight > 0) route_reads.push_back(Tensor::of({T, none(E)}, 4));
        const bool dropping = !t_.sparse_matmul && t_.capacity_factor > 0;
        if (dropping) {
            const I slots = E * expert_capacity();
            // The combine mask [B, S, E, C] (its bool cast is the dispatch mask).
            const Tensor mask = act({batch(1), none(S_), none(slots)});
            int route = forward(fusion(p + "routing", l, route_reads, {mask}), {logits});
            // dispatch: BSM,BSEC -> EBCM (a dot with batch dimension B; the mask gets no gradient)
            Op dispatch = moe_matmul(p + "dispatch", l, -1, {batch(1), none(1)}, none(slots), none(S_),
                                     none(d), act({T, none(d)}), mask, act({batch(1), none(slots), none(d)}));
            dispatch.backward = BackwardKind::no_rhs_gradient;
            int dispatched = forward(std::move(dispatch), {in, route});
            const Tensor at_experts = act({expert(E), batch_no_expert(expert_capacity()), none(d)});
            int x = forward(
                exchange(p + "dispatch.exchange", l, act({batch(1), none(slots), none(d)}), at_experts),
                {dispatched}, 0);
            // Experts: EBCM,EMH -> EBCH and back, batched over the experts.
            const Extent slots_of_expert = batch_no_expert(expert_capacity());
            Op up = moe_matmul(p + "expert_up", l, group, {expert(E), none(1)}, slots_of_expert, none(d),
                               tensor(up_width), at_experts, act({expert(E), none(d), tensor(up_width)}),
                               act({expert(E), slots_of_expert, tensor(ff)}));
            up.activation = ActivationName::mlpwi;
            int expert_up = forward(std::move(up), {x});
            Op down = moe_matmul(p + "expert_down", l, group, {expert(E), none(1)}, slots_of_expert,
                                 tensor(ff), none(d), act({expert(E), slots_of_expert, tensor(ff)}),
                                 act({expert(E), tensor(ff), none(d)}), at_experts);
            down.activation = ActivationName::mlpwo;
            int expert_down = forward(std::move(down), {expert_up});
            int back = forward(
                exchange(p + "combine.exchange", l, at_experts, act({batch(1), none(slots), none(d)})),
                {expert_down}, 0);
            // combine: EBCM,BSEC -> BSM, with the residual (and shared experts) added
            Op combine = moe_matmul(p + "combine", l, -1, {batch(1), none(1)}, none(S_), none(slots), none(d),
                                    act({batch(1), none(slots), none(d)}), mask, act({T, none(d)}));
            combine.reads.push_back(act({T, none(d)}));
            return forward(std::move(combine), {back, route, base}, 2);
        }
        if (t_.sparse_matmul) {
            // Top-k weights and expert ids per token, then the tokens sorted by expert, k times.
            const Tensor choice = Tensor::of({T, none(k)}, 4);
            int route = forward(fusion(p + "routing", l, route_reads, {choice, choice}), {logits});
            const Extent rows = batch(S_ * k);
            int sorted = forward(
                fusion(p + "permute", l, {act({T, none(d)}), choice}, {act({rows, none(d)})}), {in, route});
            // Ragged all-to-all: each chip keeps as many rows, now of its own experts.
            int x = forward(exchange(p + "dispatch.exchange", l, act({rows, none(d)}), act({rows, none(d)})),
                            {sorted}, 0);
            Op up = moe_matmul(p + "expert_up", l, group, {none(1), none(1)}, rows, none(d), tensor(up_width),
                               act({rows, none(d)}), act({expert(E), none(d), tensor(up_width)}),
                               act({rows, tensor(ff)}));
            up.activation = ActivationName::mlpwi;
            up.group_tile = t_.tile_batch_seq;
            up.groups = expert(E);
            int expert_up = forward(std::move(up), {x});
            Op down = moe_matmul(p + "expert_down", l, group, {none(1), none(1)}, rows, tensor(ff), none(d),
                                 act({rows, tensor(ff)}), act({expert(E), tensor(ff), none(d)}),
                                 act({rows, none(d)}));
            down.activation = ActivationName::mlpwo;
            down.group_tile = t_.tile_batch_seq;
            down.groups = expert(E);
            int expert_down = forward(std::move(down), {expert_up});
            int back =
                forward(exchange(p + "combine.exchange", l, act({rows, none(d)}), act({rows, none(d)})),
                        {expert_down}, 0);
            // Unsorted, weighted and summed over the k choices (fp32), with the residual added.
            return forward(fusion(p + "unpermute", l, {act({rows, none(d)}), choice, act({T, none(d)})},
                                  {act({T, none(d)})}),
                           {back, route, base}, 2);
        }
        // Every expert on every token: BSM,EMH -> BSEH, then BSEH,EHM -> BSEM, weighted sum over E.
        int route = forward(fusion(p + "routing", l, route_reads, {act({T, none(E)})}), {logits});
        Op up = moe_matmul(p + "expert_up", l, group, {expert(E), none(1)}, T, none(d), tensor(up_width),
                           act({T, none(d)}), act({expert(E), none(d), tensor(up_width)}),
                           act({expert(E), T, tensor(ff)}));
        up.activation = ActivationName::mlpwi;
        int expert_up = forward(std::move(up), {in});
        Op down = moe_matmul(p + "expert_down", l, group, {expert(E), none(1)}, T, tensor(ff), none(d),
                             act({expert(E), T, tensor(ff)}), act({expert(E), tensor(ff), none(d)}),
                             act({expert(E), T, none(d)}));
        down.activation = ActivationName::mlpwo;
        int expert_down = forward(std::move(down), {expert_up});
        return forward(
            fusion(p + "weighted_sum", l,
                   {act({expert(E), T, none(d)}), act({T, none(E)}), act({T, none(d)})}, {act({T, none(d)})}),
            {expert_down, route, base}, 2);
    }

    // What stays in HBM until this layer's backward: the remat policy's save set (MaxText
    // remat_policy names, docs/model.md) among the values the backward reads, and always the layer's
    // output (the next layer's input). JAX saves only residuals the backward uses (its partial
    // evaluation drops the others: jax/_src/ad_checkpoint.py remat_partial_eval), so a projection
    // whose output only feeds a residual add (out_proj in a parallel block) is neither saved nor
    // recomputed. A value the backward reads that is not saved is recomputed, and so is whatever
    // recomputing it needs.
    void decide_saved(std::size_t first, int out_index) {
        const std::size_t n = forwards_.size() - first;
        // The position in this layer of the forward op at graph index `index`, or n (a layer has a
        // dozen ops: a scan is cheaper than a map).
        auto local = [&](int index) {
            std::size_t i = 0;
            while (i < n && forwards_[first + i].index != index) ++i;
            return i;
        };
        std::vector<bool> read_by_backward(n, false);
        for (std::size_t i = 0; i < n; ++i) {
            const Forward& f = forwards_[first + i];
            const Op& op = g_.op(f.index);
            // A fusion's backward reads its own output; a weight matmul's backward reads only its
            // activation operand (the first input; a fused residual is not read); other ops read all.
            if (op.kind == OpKind::fusion) read_by_backward[i] = true;
            for (std::size_t k = 0; k < f.inputs.size(); ++k) {
                if ((op.weight_matmul && k > 0) || static_cast<int>(k) >= f.backward_reads) continue;
                const std::size_t at = local(f.inputs[k]);
                if (at < n) read_by_backward[at] = true;
            }
        }
        std::vector<bool> kept(n, false);
        for (std::size_t i = 0; i < n; ++i) {
            Op& op = g_.op(forwards_[first + i].index);
            const bool is_output = forwards_[first + i].index == out_index;
            const bool dot = op.kind == OpKind::matmul && op.backward != BackwardKind::flash_attention;
            const Keep keep = remat_keep(t_, op.activation, op.weight_matmul, dot);
            kept[i] = is_output || (keep != Keep::recompute && read_by_backward[i]);
            op.kept_for_backward = kept[i];
            // The layer's output is the next layer's input: kept, and offloaded only when remat_policy
            // custom offloads decoder_layer_input.
            const bool offload_output = t_.remat == Remat::custom && t_.decoder_layer_input == Keep::offload;
            op.offloaded = kept[i] && (is_output ? offload_output : keep == Keep::offload);
        }
        // Values to rebuild before the backward: read and not kept, and the inputs of those.
        std::vector<bool> rebuilt(n, false);
        for (std::size_t i = n; i-- > 0;) {
            if (!(read_by_backward[i] || rebuilt[i]) || kept[i]) continue;
            rebuilt[i] = true;
            for (int input : forwards_[first + i].inputs) {
                const std::size_t at = local(input);
                if (at < n) rebuilt[at] = !kept[at];
            }
        }
        for (std::size_t i = 0; i < n; ++i) {
            const auto index = static_cast<std::size_t>(forwards_[first + i].index);
            if (recompute_.size() <= index) recompute_.resize(index + 1, false);
            recompute_[index] = rebuilt[i];
        }
    }

    // Scores, softmax and context as XLA computes them without a fused kernel: the S x S scores
    // are written to HBM (the masked half of a causal model included).
    int dot_attention(const std::string& p, int l, int qkv) {
        Op scores_op =
            attention_matmul(p + "attn_scores", l, none(S_), none(m_.head_dim), none(S_), m_.kv_heads);
        scores_op.activation = ActivationName::scores;
        int scores = forward(std::move(scores_op), {qkv});
        Op softmax_op = fusion(p + "softmax", l, {act({batch(1), tensor(m_.heads), none(S_), none(S_)})},
                               {act({batch(1), tensor(m_.heads), none(S_), none(S_)})});
        softmax_op.attention_internal = true;
        int softmax = forward(std::move(softmax_op), {scores});
        Op context_op =
            attention_matmul(p + "attn_context", l, none(S_), none(S_), none(m_.head_dim), m_.kv_heads);
        context_op.activation = ActivationName::context;
        return forward(std::move(context_op), {softmax, qkv});
    }

    // One flash kernel (Dao 2023, FlashAttention-2; Pallas splash attention on TPU): QK^T and PV per
    // block in on-chip memory, so HBM holds Q, K, V, the output and the softmax statistics (fp32,
    // one per query and head). A causal model skips the key blocks above the diagonal.
    int flash_attention(const std::string& p, int l, int qkv) {
        Op op;
        op.name = p + "flash_attention";
        op.kind = OpKind::matmul;
        op.layer = l;
        op.attention_internal = true;
        op.activation = ActivationName::context;
        op.backward = BackwardKind::flash_attention;
        op.matmul.batch = {batch(1), tensor(m_.heads)};
        op.matmul.m = none(S_);
        op.matmul.n = none(S_);
        op.matmul.k = none(m_.head_dim);
        op.flop_scale = 2.0 * causal_block_fraction();  // QK^T and PV
        op.reads = {act({batch(1), tensor(m_.heads), none(S_), none(m_.head_dim)}),
                    act({batch(1), tensor(m_.kv_heads), none(S_), none(m_.head_dim)}),
                    act({batch(1), tensor(m_.kv_heads), none(S_), none(m_.head_dim)})};
        op.writes = {act({batch(1), tensor(m_.heads), none(S_), none(m_.head_dim)}),
                     Tensor::of({batch(1), tensor(m_.heads), none(S_)}, 4)};
        return forward(std::move(op), {qkv});
    }

    // Fraction of the S x S blocks a causal flash kernel computes: n(n+1)/2 of n^2 blocks of
    // flash_block tokens (the diagonal blocks in full).
    double causal_block_fraction() const {
        if (!m_.causal() || t_.flash_block <= 0) return 1.0;
        const double n = std::ceil(static_cast<double>(S_) / static_cast<double>(t_.flash_block));
        return (n * (n + 1.0) / 2.0) / (n * n);
    }

    // Under remat an op is recomputed before its layer's backward unless the policy keeps its output;
    // the layer's own output is never recomputed (XLA removes that dead recompute).
    bool recomputed(const Op& op, int index) const {
        if (t_.remat == Remat::none || op.kept_for_backward) return false;
        const auto i = static_cast<std::size_t>(index);
        return i < recompute_.size() && recompute_[i];
    }

    // Loss and LM head / classifier: their backward follows their forward at once.
    int head_forward_and_backward(int x) {
        const I d = m_.d_model;
        const int group = head_group();
        if (m_.is_vit()) {
            Op norm = fusion("final_norm", -1, {act({batch(1), none(d)})}, {act({batch(1), none(d)})});
            norm.param_group = group;
            norm.kept_for_backward = true;
            int n = forward(std::move(norm), {x});
            Op head = weight_matmul("classifier", -1, group, batch(1), none(d), none(m_.num_classes));
            head.kept_for_backward = true;
            int h = forward(std::move(head), {n});
            Op loss = fusion("loss", -1, {Tensor::of({batch(1), none(m_.num_classes)}, 4)},
                             {Tensor::of({batch(1), none(m_.num_classes)}, 4)});
            loss.backward = BackwardKind::loss;
            int lo = forward(std::move(loss), {h});
            int grad = backward_of(forwards_.size() - 1, lo);
            grad = backward_of(forwards_.size() - 2, grad);
            return backward_of(forwards_.size() - 3, grad);
        }
        Op norm = fusion("final_norm", -1, {act({batch(S_), none(d)})}, {act({batch(S_), none(d)})});
        norm.param_group = group;
        norm.kept_for_backward = true;
        int n = forward(std::move(norm), {x});
        int lm_group = m_.tied_embeddings ? embedding_group() : group;
        Op head = weight_matmul("lm_head", -1, lm_group, batch(S_), none(d), tensor(m_.vocab));
        head.kept_for_backward = true;
        int h = forward(std::move(head), {n});
        // Softmax cross-entropy over the vocabulary, in fp32; its backward writes dlogits.
        Op loss = fusion("loss", -1, {act({batch(S_), tensor(m_.vocab)})}, {Tensor::of({batch(S_)}, 4)});
        loss.backward = BackwardKind::loss;
        int lo = forward(std::move(loss), {h});
        int grad = backward_of(forwards_.size() - 1, lo);
        grad = backward_of(forwards_.size() - 2, grad);
        return backward_of(forwards_.size() - 3, grad);
    }

    int layer_backward(int l, int grad) {
        auto [first, last] = layer_ranges_[static_cast<std::size_t>(l)];
        // Recompute (remat) before the layer's backward, in forward order.
        int previous = grad;
        for (std::size_t i = first; i < last; ++i) {
            Forward& f = forwards_[i];
            const Op& original = g_.op(f.index);
            if (!recomputed(original, f.index)) continue;
            Op copy = original;
            copy.name = original.name + ".remat";
            copy.phase = Phase::recompute;
            copy.kept_for_backward = false;
            int index = add(std::move(copy), {previous});
            for (int input : f.inputs) {
                if (input >= 0) g_.add_edge(producer_of(input), index);
            }
            f.producer = index;
            set_producer(f.index, index);
            previous = index;
        }
        int g = grad;
        for (std::size_t i = last; i-- > first;) g = backward_of(i, g, previous == grad ? -1 : previous);
        return g;
    }

    int producer_of(int forward_index) const {
        auto i = static_cast<std::size_t>(forward_index);
        return i < producer_.size() && producer_[i] >= 0 ? producer_[i] : forward_index;
    }

    // Emits the backward of forwards_[i] given the op producing its output gradient; returns the op
    // producing its input gradient.
    int backward_of(std::size_t i, int grad, int after = -1) {
        const Forward& f = forwards_[i];  // forwards_ does not grow in the backward
        // Valid until the first op is added (the graph's ops may move then): every use of it comes
        // before that.
        const Op& fwd = g_.op(f.index);
        auto deps_with = [&](Op op) {
            op.phase = Phase::backward;
            op.kept_for_backward = false;
            int index = add(std::move(op), {grad, f.producer, after});
            for (int input : f.inputs) {
                if (input >= 0) g_.add_edge(producer_of(input), index);
            }
            return index;
        };
        if (fwd.backward == BackwardKind::flash_attention) {
            // FlashAttention-2 backward: recompute QK^T, then dP, dV, dQ and dK: five matmuls of the
            // forward's shape. Reads Q, K, V, O, dO and the statistics; writes dQ, dK, dV.
            Op b = fwd;
            b.name = fwd.name + ".bwd";
            b.flop_scale = fwd.flop_scale / 2.0 * 5.0;
            b.reads = fwd.reads;
            b.reads.insert(b.reads.end(), fwd.writes.begin(), fwd.writes.end());
            b.reads.push_back(fwd.writes[0]);
            b.writes = {fwd.reads.begin(), fwd.reads.end()};
            return deps_with(std::move(b));
        }
        if (fwd.kind == OpKind::exchange) {
            // The gradient goes back the way the tokens came.
            Op b = fwd;
            b.name = fwd.name + ".bwd";
            b.reads = fwd.writes;
            b.writes = fwd.reads;
            return deps_with(std::move(b));
        }
        if (fwd.kind == OpKind::matmul) {
            const MatmulShape& s = fwd.matmul;
            bool has_weight = fwd.param_group >= 0;
            Op dgrad;
            dgrad.name = fwd.name + (has_weight ? ".dgrad" : ".grad_lhs");
            dgrad.kind = OpKind::matmul;
            dgrad.layer = fwd.layer;
            dgrad.param_group = fwd.param_group;
            dgrad.attention_internal = fwd.attention_internal;
            dgrad.matmul = {s.batch, s.m, s.k, s.n};
            dgrad.group_tile = fwd.group_tile;
            dgrad.groups = fwd.groups;
            dgrad.reads = {fwd.writes[0], fwd.reads[1]};
            dgrad.writes = {fwd.reads[0]};
            Op wgrad = dgrad;
            wgrad.name = fwd.name + (has_weight ? ".wgrad" : ".grad_rhs");
            wgrad.matmul = {s.batch, s.k, s.n, s.m};
            wgrad.reads = {fwd.reads[0], fwd.writes[0]};
            Tensor w = fwd.reads[1];
            if (has_weight) w.element_bytes = p_;  // weight gradients accumulate in the param dtype
            wgrad.writes = {w};
            const bool input_gradient = fwd.backward != BackwardKind::no_input_gradient;
            if (fwd.backward == BackwardKind::no_rhs_gradient) return deps_with(std::move(dgrad));
            deps_with(std::move(wgrad));
            if (!input_gradient) return grad;
            return deps_with(std::move(dgrad));
        }
        Op b;
        b.name = fwd.name + ".bwd";
        b.kind = OpKind::fusion;
        b.layer = fwd.layer;
        b.param_group = fwd.param_group;
        b.attention_internal = fwd.attention_internal;
        b.reads = fwd.reads;
        b.reads.insert(b.reads.end(), fwd.writes.begin(), fwd.writes.end());
        b.writes = fwd.reads;
        if (fwd.backward == BackwardKind::scatter_to_table) {
            b.writes = {Tensor::of({tensor(m_.vocab), none(m_.d_model)}, p_)};
        }
        if (fwd.backward == BackwardKind::loss) {
            b.reads = fwd.reads;
            b.writes = fwd.reads;  // dlogits
        }
        return deps_with(std::move(b));
    }

    void embedding_backward(int grad) {
        if (m_.is_vit()) {
            int g = backward_of(1, grad);
            backward_of(0, g);
            return;
        }
        backward_of(0, grad);
    }

    void optimizer() {
        for (std::size_t gi = 0; gi < g_.param_groups.size(); ++gi) {
            const ParamGroup& group = g_.param_groups[gi];
            Extent P{group.params, Shard::param};
            Tensor params = Tensor::of({P}, p_);
            Tensor grads = Tensor::of({P}, p_);
            Op op;
            op.name = fmt::format("{}.update", group.name);
            op.kind = OpKind::optimizer;
            op.phase = Phase::optimizer;
            op.layer = group.layer;
            op.param_group = static_cast<int>(gi);
            if (t_.master_dtype && *t_.master_dtype != t_.param_dtype) {
                // The update runs on the master copy and writes the parameters back from it.
                Tensor master = Tensor::of({P}, static_cast<int>(core::dtype_bytes(*t_.master_dtype)));
                op.reads.push_back(master);
                op.writes.push_back(master);
            }
            switch (t_.optimizer) {
                case Optimizer::adam:
                case Optimizer::adamw:
                    op.reads = {params, grads, params, params};  // p, g, m, v
                    op.writes = {params, params, params};
                    break;
                case Optimizer::adafactor:
                    // Two passes over the gradient (factored row/column statistics, then the update);
                    // the factored second moment itself is negligible traffic.
                    op.reads = {params, grads, grads};
                    op.writes = {params};
                    break;
                case Optimizer::sgd:
                    op.reads = {params, grads, params};  // p, g, momentum
                    op.writes = {params, params};
                    break;
            }
            add(std::move(op), {});
        }
    }

    const ModelSpec& m_;
    const TrainingSpec& t_;
    int a_;    // activation bytes per element
    int p_;    // parameter bytes per element
    I S_ = 0;  // tokens per sample
    OpGraph g_;
    std::vector<Forward> forwards_;
    std::vector<std::pair<std::size_t, std::size_t>> layer_ranges_;
    std::vector<int> layer_outputs_;
    std::vector<bool> recompute_;  // by forward op's graph index: rebuilt before its layer's backward
    std::vector<int> producer_;    // graph index of a forward op -> op holding its output now
};

}  // namespace

OpGraph lower_training_step(const ModelSpec& model, const TrainingSpec& training) {
    return Lowering(model, training).run();
}

std::string lowering_key(const ModelSpec& m, const TrainingSpec& t) {
    // Every field as a 64-bit integer, in raw bytes: the key is only compared, and formatting 27
    // numbers as text cost more than the rest of a cache hit.
    const std::int64_t fields[] = {
        static_cast<int>(m.family), m.layers, m.d_model, m.heads, m.head_dim, m.kv_heads, m.d_ff,
        static_cast<int>(m.activation), m.vocab, m.max_positions, m.tied_embeddings, m.bias, m.parallel_block,
        static_cast<int>(m.position), m.image_size, m.patch_size, m.channels, m.num_classes, t.seq_len,
        static_cast<int>(t.dtype), static_cast<int>(t.param_dtype), static_cast<int>(t.optimizer),
        static_cast<int>(t.remat), t.master_dtype ? static_cast<int>(*t.master_dtype) : -1, t.tensor_sequence,
        static_cast<int>(t.attention), t.flash_block, m.experts, m.experts_per_token, m.moe_d_ff,
        m.shared_experts, m.moe_layer_step,
        // capacity_factor and the loss weight as their bit patterns
        std::bit_cast<std::int64_t>(t.capacity_factor), t.sparse_matmul, t.megablox, t.tile_batch_seq,
        std::bit_cast<std::int64_t>(t.load_balance_loss_weight),
        // remat custom's places, two bits each
        static_cast<int>(t.decoder_layer_input) | static_cast<int>(t.custom_keep[1]) << 2 |
            static_cast<int>(t.custom_keep[2]) << 4 | static_cast<int>(t.custom_keep[3]) << 6 |
            static_cast<int>(t.custom_keep[4]) << 8 | static_cast<int>(t.custom_keep[5]) << 10 |
            static_cast<int>(t.custom_keep[6]) << 12};
    return std::string(reinterpret_cast<const char*>(fields), sizeof(fields));
}

double optimizer_state_bytes(const ParamGroup& group, Optimizer optimizer, core::DType param_dtype) {
    const double bytes = static_cast<double>(core::dtype_bytes(param_dtype));
    switch (optimizer) {
        case Optimizer::adam:
        case Optimizer::adamw:
            return 2.0 * static_cast<double>(group.params) * bytes;
        case Optimizer::sgd:
            return static_cast<double>(group.params) * bytes;
        case Optimizer::adafactor: {
            // Shazeer & Stern 2018: a row and a column statistic per matrix, full for vectors.
            std::int64_t in_matrices = 0;
            double state = 0.0;
            for (auto [rows, cols] : group.matrices) {
                in_matrices += rows * cols;
                state += static_cast<double>(rows + cols);
            }
            state += static_cast<double>(std::max<std::int64_t>(0, group.params - in_matrices));
            return state * bytes;
        }
    }
    return 0.0;
}

}  // namespace podsim::workload
