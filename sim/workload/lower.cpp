#include "workload/lower.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <optional>

#include <fmt/format.h>

#include "core/assert.hpp"
#include "workload/residuals.hpp"

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

// What the backward may read of a forward op, as JAX keeps it (residuals.hpp).
struct Values {
    std::vector<Tensor> residuals;  // what its own backward reads besides its output and casts
    std::optional<std::vector<Tensor>> recomputed;  // `residuals` of a recompute copy, where they differ
    std::vector<Tensor> casts;                      // the compute-dtype weights its backward's dots read
    std::vector<Tensor> output;                     // its output, in JAX's shapes
    bool output_read = false;  // a backward reads the output (a later dot's operand, ...)
    // What a policy saving the op keeps (its checkpoint-named dot outputs); empty: as `output`.
    std::vector<Tensor> named;
    // Without remat: the residuals, and the output when a backward reads it.
    std::vector<Tensor> unsaved_all(bool recompute = false) const {
        std::vector<Tensor> all = casts;
        const auto& kept = recompute && recomputed ? *recomputed : residuals;
        all.insert(all.end(), kept.begin(), kept.end());
        if (output_read) all.insert(all.end(), output.begin(), output.end());
        return all;
    }
};

// Builds the graph; remembers, for each forward op, the op that last produced its output
// (the forward op itself, or its recompute copy) so that backward ops depend on the right one.
class Lowering {
  public:
    Lowering(const ModelSpec& model, const TrainingSpec& training)
        : m_(model),
          t_(training),
          a_(static_cast<int>(core::dtype_bytes(training.dtype))),
          p_(static_cast<int>(core::dtype_bytes(training.param_dtype))),
          r_(model, training),
          recomputed_(model, training, false),
          outside_loop_(model, training, true) {
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
        if (relayouts_grouped_scores()) grouped_scores_relayout(x);
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
        head.gradient_is_dot_output = m_.is_vit() || !m_.tied_embeddings;
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

    int forward(Op op, std::initializer_list<int> inputs, Values values = {}, int backward_reads = 3) {
        op.phase = Phase::forward;
        int index = add(std::move(op), inputs);
        PODSIM_ASSERT(inputs.size() <= 3, "a forward op reads at most three others");
        Forward f{index, index, {-1, -1, -1}, backward_reads};
        std::copy(inputs.begin(), inputs.end(), f.inputs.begin());
        forwards_.push_back(f);
        values_.push_back(std::move(values));
        return index;
    }

    // Saves the op's residuals outright (no remat, and the ops outside the scanned layers).
    void save_all(int forward_position) {
        const Values& v = values_[static_cast<std::size_t>(forward_position)];
        Op& op = g_.op(forwards_[static_cast<std::size_t>(forward_position)].index);
        op.saved = v.unsaved_all();
        op.output_saved = v.output_read && !v.output.empty();
        op.kept_for_backward = !op.saved.empty();
    }

    // A checkpointed layer's input (the previous layer's output, or the embedding): saved whatever
    // the policy, as jax.checkpoint saves the primal inputs of the function it wraps.
    Values layer_input_values() const {
        Values v;
        v.output = {r_.tokens(none(m_.d_model), a_)};
        return v;
    }

    bool checkpointed() const { return t_.remat != Remat::none && t_.remat != Remat::attention; }

    int embedding_forward() {
        const I d = m_.d_model;
        if (m_.is_vit()) {
            I patch_in = static_cast<I>(m_.channels) * m_.patch_size * m_.patch_size;
            Op patch = weight_matmul("patch_embed", -1, embedding_group(), batch(m_.patches()),
                                     none(patch_in), none(d));
            patch.backward = BackwardKind::no_input_gradient;
            // Its weight gradient reads the images in patch layout, a transposed copy of the input
            // batch, and the cast weight; the images themselves are an argument of the step, live
            // throughout. Both are [B, patches, c·p·p] in the compute dtype (fixture vit-b1024-full-dot:
            // tokens.1 bf16[1024,224,224,3] and loop_transpose_fusion.7 bf16[1024,14,14,16,16,3] are
            // live at XLA's peak in the layers' backward).
            Values pv;
            const Tensor patches = act({batch(m_.patches()), none(patch_in)});
            pv.residuals = {patches, patches};
            pv.casts = r_.weight_cast({none(patch_in), Extent{d, Shard::param}});
            int p = forward(std::move(patch), {}, std::move(pv));
            save_all(static_cast<int>(forwards_.size()) - 1);
            Op add_pos =
                fusion("embed_cls_pos", -1, {act({batch(m_.patches()), none(d)}), act({none(S_), none(d)})},
                       {act({batch(S_), none(d)})});
            add_pos.param_group = embedding_group();
            int e = forward(std::move(add_pos), {p}, layer_input_values());
            keep_layer_input(static_cast<int>(forwards_.size()) - 1);
            return e;
        }
        if (m_.embedding_lookup == EmbeddingLookup::one_hot) {
            // one_hot(ids) [T, V] x table [V, d] (Praxis lookup_style 'matmul'; the vocabulary split
            // over tensor, summed after): its backward reads the one-hot matrix (and the positions').
            Op embed = weight_matmul("embed", -1, embedding_group(), batch(S_), tensor(m_.vocab), none(d));
            embed.backward = BackwardKind::no_input_gradient;
            Values v = layer_input_values();
            v.residuals = {r_.tokens(tensor(m_.vocab), a_)};
            v.casts = r_.weight_cast({tensor(m_.vocab), Extent{d, Shard::param}});
            if (m_.position == PositionEmbedding::learned) {
                embed.reads.push_back(act({none(S_), none(d)}));
                v.residuals.push_back(r_.tokens(none(m_.max_positions), a_));
            }
            int e = forward(std::move(embed), {}, std::move(v));
            keep_layer_input(static_cast<int>(forwards_.size()) - 1);
            return e;
        }
        // Gather rows of the token table (and add learned positions).
        std::vector<Tensor> reads = {act({batch(S_), none(d)})};
        if (m_.position == PositionEmbedding::learned) reads.push_back(act({none(S_), none(d)}));
        Op embed = fusion("embed", -1, std::move(reads), {act({batch(S_), none(d)})});
        embed.param_group = embedding_group();
        embed.backward = BackwardKind::scatter_to_table;
        int e = forward(std::move(embed), {}, layer_input_values());
        keep_layer_input(static_cast<int>(forwards_.size()) - 1);
        return e;
    }

    // The first layer's input stays for its checkpointed backward (the gather's backward itself
    // reads only the token ids).
    void keep_layer_input(int forward_position) {
        const Values& v = values_[static_cast<std::size_t>(forward_position)];
        Op& op = g_.op(forwards_[static_cast<std::size_t>(forward_position)].index);
        op.saved = v.casts;  // what the embedding's own backward reads (a one-hot lookup)
        op.saved.insert(op.saved.end(), v.residuals.begin(), v.residuals.end());
        if (checkpointed()) op.saved.insert(op.saved.end(), v.output.begin(), v.output.end());
        op.output_saved = checkpointed();
        op.kept_for_backward = !op.saved.empty();
    }

    int layer_forward(int l, int x) {
        const I d = m_.d_model;
        const I qkv_width = m_.attention_width() + 2 * m_.kv_width();
        const Extent T = batch(S_);
        const std::string p = fmt::format("layer{}.", l);
        const int group = layer_group(l);
        std::size_t first = forwards_.size();

        // Layer weights as the backward reads them: the compute-dtype casts, sharded as stored.
        const Extent d_param{d, Shard::param};
        const Extent H = none(m_.heads), KV = none(m_.kv_heads), hd = none(m_.head_dim), F = none(m_.d_ff);

        Op ln1 = fusion(p + "norm1", l, {act({T, none(d)})}, {act({T, none(d)})});
        ln1.param_group = group;
        int n1 = forward(std::move(ln1), {x}, norm_values());
        Op qkv_op = weight_matmul(p + "qkv", l, group, T, none(d), tensor(qkv_width));
        qkv_op.activation = ActivationName::qkv_proj;
        qkv_op.merged_weights = {tensor(m_.attention_width()), tensor(m_.kv_width()), tensor(m_.kv_width())};
        Values qkv_values;  // q, k, v (after RoPE, which is linear and keeps nothing)
        qkv_values.output = {r_.tokens(tensor(m_.heads), hd, a_), r_.tokens(tensor(m_.kv_heads), hd, a_),
                             r_.tokens(tensor(m_.kv_heads), hd, a_)};
        qkv_values.output_read = true;
        for (Extent heads : {H, KV, KV}) append(qkv_values.casts, r_.weight_cast({d_param, heads, hd}));
        int qkv = forward(std::move(qkv_op), {n1}, std::move(qkv_values));
        int context =
            t_.attention == Attention::flash ? flash_attention(p, l, qkv) : dot_attention(p, l, qkv);
        Op out = weight_matmul(p + "attn_out", l, group, T, tensor(m_.attention_width()), none(d));
        out.activation = ActivationName::out_proj;
        out.reads.push_back(act({T, none(d)}));  // residual add fused into the output
        Values out_values;  // the context is its producer's; the residual add keeps nothing
        out_values.casts = r_.weight_cast({H, hd, d_param});
        out_values.output = {r_.tokens(none(d), a_)};
        int attn_out = forward(std::move(out), {context, x}, std::move(out_values));

        int mlp_in = n1;
        if (!m_.parallel_block) {
            Op ln2 = fusion(p + "norm2", l, {act({T, none(d)})}, {act({T, none(d)})});
            ln2.param_group = group;
            mlp_in = forward(std::move(ln2), {attn_out}, norm_values());
        }
        int out_index;
        if (m_.is_moe_layer(l)) {
            out_index = moe_forward(p, l, group, mlp_in, attn_out);
        } else {
            const I up_width = (m_.gated() ? 2 : 1) * static_cast<I>(m_.d_ff);
            Op up = weight_matmul(p + "mlp_up", l, group, T, none(d), tensor(up_width));
            up.activation = ActivationName::mlpwi;
            if (m_.gated()) up.merged_weights = {tensor(m_.d_ff), tensor(m_.d_ff)};
            up.writes = {act({T, tensor(m_.d_ff)})};  // activation (and gate product) fused in
            Values up_values;  // the down projection's operand, the activation's internals, the casts
            for (int i = 0; i < (m_.gated() ? 2 : 1); ++i)
                append(up_values.casts, r_.weight_cast({d_param, F}));
            append(up_values.residuals, r_.activation());
            up_values.recomputed = recomputed_.rebuilt_activation();
            up_values.output = {r_.tokens(tensor(m_.d_ff), a_)};
            up_values.output_read = true;
            up_values.named = r_.mlp_inputs();
            int mlp_up = forward(std::move(up), {mlp_in}, std::move(up_values));
            Op down = weight_matmul(p + "mlp_down", l, group, T, tensor(m_.d_ff), none(d));
            down.activation = ActivationName::mlpwo;
            down.reads.push_back(act({T, none(d)}));  // residual
            Values down_values;
            down_values.casts = r_.weight_cast({F, d_param});
            down_values.output = {r_.tokens(none(d), a_)};
            out_index = forward(std::move(down), {mlp_up, attn_out}, std::move(down_values));
        }

        decide_saved(first, out_index);
        layer_outputs_.push_back(out_index);
        layer_ranges_.push_back({first, forwards_.size()});
        return out_index;
    }

    // Tensors of `shape` in each of `rules`' element sizes: elementwise values (residuals.hpp's
    // activation rules) on an MoE layer's rows instead of the dense MLP's.
    static std::vector<Tensor> shaped_as(const std::vector<Tensor>& rules, const Tensor& shape) {
        std::vector<Tensor> out;
        for (const Tensor& t : rules) {
            Tensor v = shape;
            v.element_bytes = t.element_bytes;
            out.push_back(v);
        }
        return out;
    }

    // An MoE layer's up projection writing `out`: the dense MLP's values (its activation's internals,
    // the dot outputs a policy saving mlpwi keeps) on its rows, and its weight casts.
    Values up_values(const Tensor& out, std::initializer_list<Extent> weight) const {
        Values v;
        for (int i = 0; i < (m_.gated() ? 2 : 1); ++i) append(v.casts, r_.weight_cast(weight));
        v.residuals = shaped_as(r_.activation(), out);
        v.recomputed = shaped_as(recomputed_.rebuilt_activation(), out);
        v.output = {out};
        v.output_read = true;
        v.named = shaped_as(r_.mlp_inputs(), out);
        return v;
    }

    // An op whose backward reads nothing of its own but its weight casts; `output_read` when a
    // later op's backward reads its output.
    static Values output_values(const Tensor& out, bool output_read, std::vector<Tensor> casts = {}) {
        Values v;
        v.casts = std::move(casts);
        v.output = {out};
        v.output_read = output_read;
        return v;
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

    // Tokens an expert takes per sequence when it drops the rest.
    I expert_capacity() const { return m_.expert_capacity(S_, t_.capacity_factor); }

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
            int shared_up =
                forward(std::move(up), {in},
                        up_values(act({T, tensor(shared)}), {Extent{d, Shard::param}, none(shared)}));
            Op down = weight_matmul(p + "shared_down", l, group, T, tensor(shared), none(d));
            down.activation = ActivationName::mlpwo;
            down.reads.push_back(act({T, none(d)}));
            base = forward(std::move(down), {shared_up, residual},
                           output_values(act({T, none(d)}), false,
                                         r_.weight_cast({none(shared), Extent{d, Shard::param}})));
        }
        Op gate = weight_matmul(p + "gate", l, group, T, none(d), none(E));
        // The gate's logits: the routing keeps its own softmax.
        int logits = forward(
            std::move(gate), {in},
            output_values(act({T, none(E)}), false, r_.weight_cast({Extent{d, Shard::param}, none(E)})));
        // The routing's backward reads its softmax probabilities (fp32) and the softmax's two fp32
        // row statistics [B, S] (its max and sum, as the attention's softmax keeps per row; the
        // forward loops of the XLA fixtures moe-b8-none-dot and moe16k1-b8-none-flash); the dispatch
        // and combine backwards read its output.
        auto route_values = [&](std::vector<Tensor> outputs) {
            Values v;
            v.residuals = {Tensor::of({T, none(E)}, 4), Tensor::of({T}, 4), Tensor::of({T}, 4)};
            v.output = std::move(outputs);
            v.output_read = true;
            return v;
        };
        const Extent d_param{d, Shard::param};

        // Routing: softmax (fp32) and top-k over the logits; the load-balancing loss (Switch
        // Transformer) reads the top-k one-hot and the probabilities once more.
        std::vector<Tensor> route_reads = {act({T, none(E)})};
        if (t_.load_balance_loss_weight > 0) route_reads.push_back(Tensor::of({T, none(E)}, 4));
        const bool dropping = !t_.sparse_matmul && t_.capacity_factor > 0;
        if (dropping) {
            const I slots = E * expert_capacity();
            // The combine mask [B, S, E, C] (its bool cast is the dispatch mask).
            const Tensor mask = act({batch(1), none(S_), none(slots)});
            // What the masks' backward reads besides (JAX's rules for the multiplies that build them,
            // as the forward loop of the XLA fixture moe-b8-none-dot keeps them): the capacity-slot
            // one-hot cast to the compute dtype, [B, S, E, C + 1] (the probabilities' gradient of
            // probs x one-hot), the kept-expert mask cast likewise, [B, S, E] (of probs x kept), and
            // the dispatch mask [B, S, E, C] for the dispatch einsum's input gradient, which XLA keeps
            // as the bool it was cast from.
            Values routing = route_values({mask});
            routing.residuals.push_back(act({batch(1), none(S_), none(E * (expert_capacity() + 1))}));
            routing.residuals.push_back(act({T, none(E)}));
            routing.residuals.push_back(Tensor::of({batch(1), none(S_), none(slots)}, 1));
            int route = forward(fusion(p + "routing", l, route_reads, {mask}), {logits}, std::move(routing));
            // dispatch: BSM,BSEC -> EBCM (a dot with batch dimension B; the mask gets no gradient)
            Op dispatch = moe_matmul(p + "dispatch", l, -1, {batch(1), none(1)}, none(slots), none(S_),
                                     none(d), act({T, none(d)}), mask, act({batch(1), none(slots), none(d)}));
            dispatch.backward = BackwardKind::no_rhs_gradient;
            int dispatched = forward(std::move(dispatch), {in, route},
                                     output_values(act({batch(1), none(slots), none(d)}), false));
            const Tensor at_experts = act({expert(E), batch_no_expert(expert_capacity()), none(d)});
            int x = forward(
                exchange(p + "dispatch.exchange", l, act({batch(1), none(slots), none(d)}), at_experts),
                {dispatched}, output_values(at_experts, true), 0);
            // Experts: EBCM,EMH -> EBCH and back, batched over the experts.
            const Extent slots_of_expert = batch_no_expert(expert_capacity());
            Op up = moe_matmul(p + "expert_up", l, group, {expert(E), none(1)}, slots_of_expert, none(d),
                               tensor(up_width), at_experts, act({expert(E), none(d), tensor(up_width)}),
                               act({expert(E), slots_of_expert, tensor(ff)}));
            up.activation = ActivationName::mlpwi;
            int expert_up = forward(
                std::move(up), {x},
                up_values(act({expert(E), slots_of_expert, tensor(ff)}), {expert(E), d_param, none(ff)}));
            Op down = moe_matmul(p + "expert_down", l, group, {expert(E), none(1)}, slots_of_expert,
                                 tensor(ff), none(d), act({expert(E), slots_of_expert, tensor(ff)}),
                                 act({expert(E), tensor(ff), none(d)}), at_experts);
            down.activation = ActivationName::mlpwo;
            int expert_down =
                forward(std::move(down), {expert_up},
                        output_values(at_experts, false, r_.weight_cast({expert(E), none(ff), d_param})));
            int back = forward(
                exchange(p + "combine.exchange", l, at_experts, act({batch(1), none(slots), none(d)})),
                {expert_down}, output_values(act({batch(1), none(slots), none(d)}), true), 0);
            // combine: EBCM,BSEC -> BSM, with the residual (and shared experts) added
            Op combine = moe_matmul(p + "combine", l, -1, {batch(1), none(1)}, none(S_), none(slots), none(d),
                                    act({batch(1), none(slots), none(d)}), mask, act({T, none(d)}));
            combine.reads.push_back(act({T, none(d)}));
            return forward(std::move(combine), {back, route, base}, output_values(act({T, none(d)}), false),
                           2);
        }
        if (t_.sparse_matmul) {
            // Top-k weights and expert ids per token, then the tokens sorted by expert, k times.
            const Tensor choice = Tensor::of({T, none(k)}, 4);
            int route = forward(fusion(p + "routing", l, route_reads, {choice, choice}), {logits},
                                route_values({choice, choice}));
            const Extent rows = batch(S_ * k);
            int sorted =
                forward(fusion(p + "permute", l, {act({T, none(d)}), choice}, {act({rows, none(d)})}),
                        {in, route}, output_values(act({rows, none(d)}), false));
            // Ragged all-to-all: each chip keeps as many rows, now of its own experts.
            int x = forward(exchange(p + "dispatch.exchange", l, act({rows, none(d)}), act({rows, none(d)})),
                            {sorted}, output_values(act({rows, none(d)}), true), 0);
            Op up = moe_matmul(p + "expert_up", l, group, {none(1), none(1)}, rows, none(d), tensor(up_width),
                               act({rows, none(d)}), act({expert(E), none(d), tensor(up_width)}),
                               act({rows, tensor(ff)}));
            up.activation = ActivationName::mlpwi;
            up.group_tile = t_.tile_batch_seq;
            up.groups = expert(E);
            int expert_up = forward(std::move(up), {x},
                                    up_values(act({rows, tensor(ff)}), {expert(E), d_param, none(ff)}));
            Op down = moe_matmul(p + "expert_down", l, group, {none(1), none(1)}, rows, tensor(ff), none(d),
                                 act({rows, tensor(ff)}), act({expert(E), tensor(ff), none(d)}),
                                 act({rows, none(d)}));
            down.activation = ActivationName::mlpwo;
            down.group_tile = t_.tile_batch_seq;
            down.groups = expert(E);
            int expert_down = forward(
                std::move(down), {expert_up},
                output_values(act({rows, none(d)}), false, r_.weight_cast({expert(E), none(ff), d_param})));
            int back =
                forward(exchange(p + "combine.exchange", l, act({rows, none(d)}), act({rows, none(d)})),
                        {expert_down}, output_values(act({rows, none(d)}), true), 0);
            // Unsorted, weighted and summed over the k choices (fp32), with the residual added.
            return forward(fusion(p + "unpermute", l, {act({rows, none(d)}), choice, act({T, none(d)})},
                                  {act({T, none(d)})}),
                           {back, route, base}, output_values(act({T, none(d)}), false), 2);
        }
        // Every expert on every token: BSM,EMH -> BSEH, then BSEH,EHM -> BSEM, weighted sum over E.
        int route = forward(fusion(p + "routing", l, route_reads, {act({T, none(E)})}), {logits},
                            route_values({act({T, none(E)})}));
        Op up = moe_matmul(p + "expert_up", l, group, {expert(E), none(1)}, T, none(d), tensor(up_width),
                           act({T, none(d)}), act({expert(E), none(d), tensor(up_width)}),
                           act({expert(E), T, tensor(ff)}));
        up.activation = ActivationName::mlpwi;
        int expert_up = forward(std::move(up), {in},
                                up_values(act({expert(E), T, tensor(ff)}), {expert(E), d_param, none(ff)}));
        Op down = moe_matmul(p + "expert_down", l, group, {expert(E), none(1)}, T, tensor(ff), none(d),
                             act({expert(E), T, tensor(ff)}), act({expert(E), tensor(ff), none(d)}),
                             act({expert(E), T, none(d)}));
        down.activation = ActivationName::mlpwo;
        int expert_down = forward(std::move(down), {expert_up},
                                  output_values(act({expert(E), T, none(d)}), true,
                                                r_.weight_cast({expert(E), none(ff), d_param})));
        return forward(
            fusion(p + "weighted_sum", l,
                   {act({expert(E), T, none(d)}), act({T, none(E)}), act({T, none(d)})}, {act({T, none(d)})}),
            {expert_down, route, base}, output_values(act({T, none(d)}), false), 2);
    }

    // A weight matmul that is one dot_general without batch dimensions: what JAX's
    // checkpoint_dots_with_no_batch_dims (MaxText's `minimal`) saves (jax/_src/ad_checkpoint.py,
    // dot_with_no_batch_dims_saveable). The experts' einsums are batched over the experts
    // (EBCM,EMH -> EBCH), and a grouped matmul is ragged_dot or megablox's kernel, not a dot_general.
    static bool unbatched_weight_dot(const Op& op) {
        if (!op.weight_matmul || op.group_tile > 0) return false;
        for (const Extent& e : op.matmul.batch)
            if (e.size > 1 || per_sample(e.shard)) return false;
        return true;
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
        auto keep_of = [&](const Op& op) {
            const bool dot = op.kind == OpKind::matmul && op.backward != BackwardKind::flash_attention;
            return remat_keep(t_, op.activation, unbatched_weight_dot(op), dot);
        };
        std::vector<bool> kept(n, false);
        for (std::size_t i = 0; i < n; ++i) {
            Op& op = g_.op(forwards_[first + i].index);
            const bool is_output = forwards_[first + i].index == out_index;
            Keep keep = keep_of(op);
            // Tokens on their way to or from the experts are the value their producer wrote (with no
            // expert axis the same array; with one, as many bytes per chip): the policy keeps them as
            // it keeps that value (the experts' output under a policy that saves `mlpwo`).
            if (op.kind == OpKind::exchange) {
                const std::size_t at = local(forwards_[first + i].inputs[0]);
                if (at < n) keep = keep_of(g_.op(forwards_[first + at].index));
            }
            kept[i] = is_output || (keep != Keep::recompute && read_by_backward[i]);
            const Values& v = values_[first + i];
            if (t_.remat == Remat::none) {
                save_all(static_cast<int>(first + i));
                continue;
            }
            op.kept_for_backward = kept[i];
            // The layer's output is the next layer's input: kept, and offloaded only when remat_policy
            // custom offloads decoder_layer_input.
            const bool offload_output = t_.remat == Remat::custom && t_.decoder_layer_input == Keep::offload;
            op.offloaded = kept[i] && (is_output ? offload_output : keep == Keep::offload);
            if (!kept[i]) continue;
            if (!checkpointed()) {
                // podsim's own `attention` policy: a kept op keeps what it would without remat.
                op.saved = is_output ? v.output : v.unsaved_all();
                op.output_saved = is_output || v.output_read;
            } else {
                // jax.checkpoint saves the named value the policy allows (a projection's dot
                // outputs), or the layer output, which is the next layer's input.
                const bool as_output = is_output || v.named.empty();
                op.saved = as_output ? v.output : v.named;
                op.output_saved = as_output;
                // What the op's backward reads besides: the activation's internals, rebuilt from
                // the saved dot outputs before the layer's backward (an elementwise fusion).
                if (!as_output && op.activation == ActivationName::mlpwi) {
                    const auto index = static_cast<std::size_t>(forwards_[first + i].index);
                    if (internals_.size() <= index) internals_.resize(index + 1, false);
                    internals_[index] = true;
                }
            }
        }
        // An exchange (all-to-all) is no compute op: what it keeps, the tokens as they arrived, is
        // counted with its input's producer, which holds as many bytes per chip.
        for (std::size_t i = 0; i < n; ++i) {
            Op& op = g_.op(forwards_[first + i].index);
            if (op.kind != OpKind::exchange || !op.kept_for_backward) continue;
            const std::size_t at = local(forwards_[first + i].inputs[0]);
            if (at < n) {
                Op& producer = g_.op(forwards_[first + at].index);
                append(producer.saved, op.saved);
                producer.kept_for_backward = true;
            }
            op.saved.clear();
            op.output_saved = false;
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

    // A normalisation: its internals, and its output, which the next dots' backward reads.
    Values norm_values(bool in_loop = true) const {
        Values v;
        v.residuals = in_loop ? r_.norm() : outside_loop_.norm();
        v.recomputed = recomputed_.rebuilt_norm();
        v.output = {r_.tokens(none(m_.d_model), a_)};
        v.output_read = true;
        return v;
    }

    // `from` less one tensor of the same shape for each of `less`.
    static std::vector<Tensor> without(std::vector<Tensor> from, const std::vector<Tensor>& less) {
        auto same = [](const Tensor& a, const Tensor& b) {
            if (a.rank != b.rank || a.element_bytes != b.element_bytes) return false;
            for (int i = 0; i < a.rank; ++i) {
                const auto k = static_cast<std::size_t>(i);
                if (a.dims[k].size != b.dims[k].size || a.dims[k].shard != b.dims[k].shard) return false;
            }
            return true;
        };
        for (const Tensor& t : less) {
            auto it = std::find_if(from.begin(), from.end(), [&](const Tensor& f) { return same(f, t); });
            if (it != from.end()) from.erase(it);
        }
        return from;
    }

    static void append(std::vector<Tensor>& to, const std::vector<Tensor>& more) {
        to.insert(to.end(), more.begin(), more.end());
    }

    // Scores, softmax and context as XLA computes them without a fused kernel: the S x S scores
    // are written to HBM (the masked half of a causal model included).
    int dot_attention(const std::string& p, int l, int qkv) {
        Op scores_op =
            attention_matmul(p + "attn_scores", l, none(S_), none(m_.head_dim), none(S_), m_.kv_heads);
        scores_op.activation = ActivationName::scores;
        const Tensor square = Tensor::of({batch(1), tensor(m_.heads), none(S_), none(S_)}, a_);
        Values scores_values;  // q and k are qkv's; the softmax keeps what its backward reads
        scores_values.output = {square};
        int scores = forward(std::move(scores_op), {qkv}, std::move(scores_values));
        Op softmax_op = fusion(p + "softmax", l, {act({batch(1), tensor(m_.heads), none(S_), none(S_)})},
                               {act({batch(1), tensor(m_.heads), none(S_), none(S_)})});
        softmax_op.attention_internal = true;
        Values softmax_values;  // the probabilities in the compute dtype: the context dot's operand
        softmax_values.residuals = r_.softmax();
        softmax_values.recomputed = recomputed_.softmax();
        // The causal mask depends on no layer input: JAX's scan hoists it out of the loop (one copy,
        // not one per layer), as the first layer's.
        if (m_.causal() && l == 0 && t_.scan_layers) softmax_values.residuals.push_back(r_.causal_mask());
        softmax_values.output = {square};
        softmax_values.output_read = true;
        int softmax = forward(std::move(softmax_op), {scores}, std::move(softmax_values));
        Op context_op =
            attention_matmul(p + "attn_context", l, none(S_), none(S_), none(m_.head_dim), m_.kv_heads);
        context_op.activation = ActivationName::context;
        Values context_values;  // the output projection's operand
        context_values.output = {r_.tokens(tensor(m_.heads), none(m_.head_dim), a_)};
        context_values.output_read = true;
        return forward(std::move(context_op), {softmax, qkv}, std::move(context_values));
    }

    // Grouped-query dot attention keeps its probabilities as [B, KV, G, S, S] (MaxText's
    // apply_attention_dot splits the query into KV groups). Without remat the scanned forward stacks
    // them over the layers in the layout its dot wrote, and the backward reads them in another: XLA
    // copies each whole stack to the new layout between the two loops, one after the other, each
    // freed once copied (fixtures l32-kv8-b2-none-dot, 1b-kv4-b4-none-dot: loop_transpose_fusion of
    // f32[16,B,KV,G,S,S] and input_transpose_fusion of its bf16 twin after the forward `while`, the
    // step's peak). Multi-head (G = 1) and multi-query (KV = 1) attention need no copy (the fixtures
    // 1b-b8-none-dot, gemma-kv1-b2-none-dot).
    bool relayouts_grouped_scores() const {
        return t_.scan_layers && t_.attention == Attention::dot_product && t_.remat == Remat::none &&
               m_.grouped_query();
    }

    // One op for those copies: the HBM traffic of all (the fp32 and compute-dtype stacks each read
    // and written), the memory of the largest in flight (the fp32 stack's copy, a temporary).
    void grouped_scores_relayout(int after) {
        const Extent stacked{S_ * m_.layers, Shard::none};
        const Tensor fp32 = Tensor::of({batch(1), tensor(m_.heads), none(S_), stacked}, 4);
        const Tensor compute = act({batch(1), tensor(m_.heads), none(S_), stacked});
        Op op = fusion("attention_relayout", -1, {fp32, compute, compute}, {fp32});
        op.phase = Phase::forward;
        op.whole_layer_stack = true;
        add(std::move(op), {after});
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
        Values v;  // the output (the output projection's operand too) and the statistics
        v.output = {r_.tokens(tensor(m_.heads), none(m_.head_dim), a_), r_.flash_statistics()};
        v.output_read = true;
        v.named = {v.output[0]};
        return forward(std::move(op), {qkv}, std::move(v));
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
            int n = forward(std::move(norm), {x}, norm_values(false));
            save_all(static_cast<int>(forwards_.size()) - 1);
            Op head = weight_matmul("classifier", -1, group, batch(1), none(d), none(m_.num_classes));
            Values head_values;
            head_values.casts = r_.weight_cast({Extent{d, Shard::param}, none(m_.num_classes)});
            int h = forward(std::move(head), {n}, std::move(head_values));
            save_all(static_cast<int>(forwards_.size()) - 1);
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
        int n = forward(std::move(norm), {x}, norm_values(false));
        save_all(static_cast<int>(forwards_.size()) - 1);
        int lm_group = m_.tied_embeddings ? embedding_group() : group;
        Op head = weight_matmul("lm_head", -1, lm_group, batch(S_), none(d), tensor(m_.vocab));
        // The logits feed the cross-entropy, whose backward follows at once: XLA lets them go once
        // the fp32 softmax is formed, so they are not kept; the cast weight is.
        Values head_values;
        head_values.casts = m_.tied_embeddings ? r_.weight_cast({tensor(m_.vocab), Extent{d, Shard::param}})
                                               : r_.weight_cast({Extent{d, Shard::param}, tensor(m_.vocab)});
        int h = forward(std::move(head), {n}, std::move(head_values));
        save_all(static_cast<int>(forwards_.size()) - 1);
        // Softmax cross-entropy over the vocabulary, in fp32; its backward writes dlogits.
        Op loss = fusion("loss", -1, {act({batch(S_), tensor(m_.vocab)})}, {Tensor::of({batch(S_)}, 4)});
        loss.backward = BackwardKind::loss;
        Values loss_values;  // dense labels: the one-hot matrix, which the gradient reads
        if (t_.loss_labels == LossLabels::one_hot) loss_values.residuals = {r_.tokens(tensor(m_.vocab), a_)};
        int lo = forward(std::move(loss), {h}, std::move(loss_values));
        save_all(static_cast<int>(forwards_.size()) - 1);
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
            const Values& v = values_[i];
            if (rebuilds_internals(f.index)) {
                // The saved dot outputs through the activation again: what the backward reads.
                Op act_op = fusion(original.name + ".act.remat", original.layer, v.named, original.writes);
                act_op.phase = Phase::recompute;
                // Its internals but the saved dot outputs (the weight casts are the backward's own).
                act_op.saved = without(v.recomputed.value_or(v.residuals), v.named);
                act_op.saved.insert(act_op.saved.end(), v.output.begin(), v.output.end());
                act_op.output_saved = true;
                act_op.writes.insert(act_op.writes.end(), act_op.saved.begin(), act_op.saved.end() - 1);
                int index = add(std::move(act_op), {previous, f.index});
                f.producer = index;
                set_producer(f.index, index);
                previous = index;
                continue;
            }
            if (!recomputed(original, f.index)) continue;
            Op copy = original;
            copy.name = original.name + ".remat";
            copy.phase = Phase::recompute;
            copy.kept_for_backward = false;
            copy.offloaded = false;
            copy.saved = v.unsaved_all(true);
            copy.output_saved = v.output_read;
            if (original.kind == OpKind::exchange) {
                // As decide_saved: counted with the copy (or kept op) that produced its input.
                append(g_.op(producer_of(f.inputs[0])).saved, copy.saved);
                copy.saved.clear();
                copy.output_saved = false;
            }
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

    bool rebuilds_internals(int forward_index) const {
        const auto i = static_cast<std::size_t>(forward_index);
        return i < internals_.size() && internals_[i];
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
        // A recompute copy (or rebuilt internals) of this op: its residuals go after its backward.
        const int copy = f.producer != f.index ? f.producer : -1;
        auto deps_with = [&](Op op) {
            op.frees_saved_of = copy;
            op.phase = Phase::backward;
            op.kept_for_backward = false;
            op.offloaded = false;
            op.saved.clear();
            op.output_saved = false;
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
            dgrad.k_parts = fwd.merged_weights;
            dgrad.group_tile = fwd.group_tile;
            dgrad.groups = fwd.groups;
            dgrad.reads = {fwd.writes[0], fwd.reads[1]};
            dgrad.writes = {fwd.reads[0]};
            Op wgrad = dgrad;
            wgrad.name = fwd.name + (has_weight ? ".wgrad" : ".grad_rhs");
            wgrad.matmul = {s.batch, s.k, s.n, s.m};
            wgrad.k_parts.clear();  // one dot: the weights' gradients share the input
            wgrad.reads = {fwd.reads[0], fwd.writes[0]};
            // The dot writes the weight gradient in the dtype of the weight it read (the compute-dtype
            // cast); the accumulation into the param dtype is the gradients' own buffer (the dumped
            // 1B step's backward body: gemm_fusion_dot.23 writes bf16[2048,5632], added into the
            // fp32 accumulator stack by fused_dynamic_update_slice).
            wgrad.writes = {fwd.reads[1]};
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
            // dlogits = softmax - one-hot. With integer labels the one-hot is the gather's transpose,
            // a scatter into fp32 zeros the cast to the compute dtype cannot fuse with: both are
            // written (the dump: input_scatter_fusion f32, then wrapped_convert). Dense labels:
            // one elementwise fusion writes the compute dtype.
            b.reads = fwd.reads;
            b.writes = fwd.reads;
            if (t_.loss_labels == LossLabels::ids) {
                for (Tensor& t : b.writes) t.element_bytes = 4;
                if (a_ != 4) b.writes.insert(b.writes.end(), fwd.reads.begin(), fwd.reads.end());
            }
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
    int a_;  // activation bytes per element
    int p_;  // parameter bytes per element
    Residuals r_;
    // What a recompute copy keeps until its backward: JAX's rules whether or not the layers are
    // scanned (its backward follows at once, as in a scanned body).
    Residuals recomputed_;
    // What an op outside the layers' loop and outside remat keeps (the final norm): XLA's fusion
    // decides what is written, as in an unrolled program (docs/model.md, "Residuals").
    Residuals outside_loop_;
    I S_ = 0;  // tokens per sample
    OpGraph g_;
    std::vector<Forward> forwards_;
    std::vector<std::pair<std::size_t, std::size_t>> layer_ranges_;
    std::vector<int> layer_outputs_;
    std::vector<bool> recompute_;  // by forward op's graph index: rebuilt before its layer's backward
    std::vector<bool> internals_;  // by forward op's graph index: kept, its internals rebuilt
    std::vector<Values> values_;   // by position in forwards_
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
        static_cast<int>(m.position), static_cast<int>(m.embedding_lookup), m.image_size, m.patch_size,
        m.channels, m.num_classes, t.seq_len, static_cast<int>(t.dtype), static_cast<int>(t.param_dtype),
        static_cast<int>(t.optimizer), static_cast<int>(t.remat),
        t.master_dtype ? static_cast<int>(*t.master_dtype) : -1, t.tensor_sequence, t.scan_layers,
        static_cast<int>(t.loss_labels), static_cast<int>(t.attention), t.flash_block, m.experts,
        m.experts_per_token, m.moe_d_ff, m.shared_experts, m.moe_layer_step,
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
