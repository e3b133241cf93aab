#include "memory/memory_profile.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <memory>

#include "core/assert.hpp"

namespace podsim::memory {
namespace {

enum Holder { kActivations, kGathered, kCollective, kTemporaries, kGrads, kHolders };

struct Change {
    core::Time time;
    double delta;
    std::uint32_t seq;  // order of creation: the last tie-break
    int holder;
};

// Changes in an array allocated for at most `capacity` of them (not zero-filled, not grown).
class ChangeBuffer {
  public:
    explicit ChangeBuffer(std::size_t capacity)
        : data_(std::make_unique_for_overwrite<Change[]>(capacity)), capacity_(capacity) {}
    void push(const Change& c) {
        PODSIM_ASSERT(size_ < capacity_, "more memory changes than bounded");
        data_[size_++] = c;
    }
    void set_size(std::size_t size) { size_ = size; }
    std::size_t size() const { return size_; }
    Change* begin() const { return data_.get(); }
    Change* end() const { return data_.get() + size_; }
    const Change& operator[](std::size_t i) const { return data_[i]; }

  private:
    std::unique_ptr<Change[]> data_;
    std::size_t size_ = 0, capacity_ = 0;
};

// Frees before allocations at the same instant, then the order the changes were made in.
bool before(const Change& a, const Change& b) {
    if (a.time != b.time) return a.time < b.time;
    if (a.delta != b.delta) return a.delta < b.delta;
    return a.seq < b.seq;
}

// Changes come in streams that are each nearly or wholly in time order already: sorting the streams
// apart and merging them gives the order of one stable sort of all of them by (time, delta), which
// fixes the order of the floating-point sums, at a fraction of its cost.
enum Stream {
    kComputeStarts,  // compute ops run one at a time in program order: sorted
    kComputeEnds,    // likewise
    kDeferred,       // frees at the end of a later op (a layer's backward, a group's last user)
    kOther,          // collectives and offload copies
    kStreams
};

// Whether `bytes` sets a new peak over `peak`. A chip's share of a tensor split over an axis that is
// not a power of two is a fraction of a byte, and sums of fractions taken in another order (a folded
// timeline adds a period's drift once per copy) differ in their last bits: a peak that comes back
// in every microbatch would be reported at whichever copy rounding favoured. So a later instant must
// be higher by more than that rounding (1e-12 of the peak, a thousand times the 1e-15 seen) to take
// the peak from an earlier one.
constexpr double kPeakRoundingTolerance = 1e-12;
bool new_peak(double bytes, double peak) {
    return bytes > peak + std::abs(peak) * kPeakRoundingTolerance;
}

// Whether `bytes` is a whole number, as std::floor(bytes) == bytes says, without a call to floor (a
// library call on x86-64 before SSE4.1, made for every change): below 2^52, adding and removing 2^52
// rounds to the nearest whole number; from 2^52 on every double is whole; NaN is not.
bool whole(double bytes) {
    constexpr double kTwo52 = 4503599627370496.0;
    const double magnitude = std::abs(bytes);
    return magnitude >= kTwo52 || (magnitude + kTwo52) - kTwo52 == magnitude;
}

bool is_compute(const parallel::DeviceOp& op) {
    return op.category == parallel::OpCategory::matmul || op.category == parallel::OpCategory::fusion;
}

int pass_of(workload::Phase phase) {
    return phase == workload::Phase::forward ? 0 : 1;
}

// The residuals of kept forward ops and of recompute copies live until their layer's backward ends.
bool awaits_backward(const parallel::DeviceOp& op) {
    return op.phase == workload::Phase::recompute ||
           (op.phase == workload::Phase::forward && op.kept_for_backward);
}

// An op's output is a temporary unless it is one of the residuals the op keeps, or an optimizer
// update's, which writes the donated parameters and state in place.
bool output_is_temporary(const parallel::DeviceOp& op) {
    return !(awaits_backward(op) && op.output_saved) && op.phase != workload::Phase::optimizer;
}

// The first op of the layers' backward (their recompute included): gradient accumulators are
// allocated there (XLA: the zeroed operands of the backward `while`), and the head's residuals,
// whose backward ran just before, are gone.
bool starts_layer_backward(const parallel::DeviceOp& op) {
    return is_compute(op) && op.layer >= 0 &&
           (op.phase == workload::Phase::backward || op.phase == workload::Phase::recompute);
}

}  // namespace

MemoryProfile profile_memory(const parallel::DeviceProgram& program, const scheduler::Timeline& timeline,
                             double capacity_bytes, const MemoryFold* fold, FoldedPeak* folded_peak) {
    const auto& ops = program.ops;
    const auto& spans = timeline.spans;

    // Flat tables: (layer, microbatch) -> end of the layer's backward, (group, pass, microbatch) ->
    // end of the group's last user; -1 where there is none. Offloaded activations leave HBM when
    // their copy to host ends and return when the copy back starts: by op, when there are copies.
    // (Few passes over the ops: a program of a big model is megabytes of them.)
    int min_layer = 0, max_layer = 0, max_group = 0, max_microbatch = 0;
    bool copies = false;
    std::size_t compute_ops = 0, gathers = 0, scatters = 0;  // bounds of the change streams' sizes
    for (const auto& op : ops) {
        min_layer = std::min(min_layer, op.layer);
        max_layer = std::max(max_layer, op.layer);
        max_group = std::max(max_group, op.param_group);
        max_microbatch = std::max(max_microbatch, op.microbatch);
        copies = copies || op.category == parallel::OpCategory::copy;
        compute_ops += is_compute(op) ? 1 : 0;
        gathers += op.category == parallel::OpCategory::all_gather ? 1 : 0;
        scatters += op.category == parallel::OpCategory::reduce_scatter ? 1 : 0;
    }
    const auto microbatches = static_cast<std::size_t>(max_microbatch) + 1;
    auto layer_slot = [&](int layer, int microbatch) {
        return static_cast<std::size_t>(layer - min_layer) * microbatches +
               static_cast<std::size_t>(microbatch);
    };
    auto group_slot = [&](int group, int pass, int microbatch) {
        return (static_cast<std::size_t>(group) * 2 + static_cast<std::size_t>(pass)) * microbatches +
               static_cast<std::size_t>(microbatch);
    };
    std::vector<core::Time> forward_end(
        copies ? static_cast<std::size_t>(max_layer - min_layer + 1) * microbatches : 0, -1);
    std::vector<core::Time> backward_end(static_cast<std::size_t>(max_layer - min_layer + 1) * microbatches,
                                         -1);
    std::vector<core::Time> last_user_end((static_cast<std::size_t>(max_group) + 1) * 2 * microbatches, -1);
    std::vector<core::Time> offload_end(copies ? ops.size() : 0, -1),
        reload_start(copies ? ops.size() : 0, -1);
    // By microbatch: the start of its layers' backward, -1 when it has none.
    std::vector<core::Time> layers_backward_start(microbatches, -1);
    int first_backward = -1;  // where stacked gradients are allocated
    // By parameter group: whether it is a layer's, its backward op that starts first (microbatch 0)
    // and the last end of its backward ops, which write its gradients.
    const std::size_t groups = program.group_grads_bytes.size();
    std::vector<bool> layer_group(groups, false);
    std::vector<int> group_grad_first(groups, -1);  // index of the first-starting backward op
    std::vector<core::Time> group_grad_end(groups, -1);
    for (std::size_t i = 0; i < ops.size(); ++i) {
        const auto& op = ops[i];
        if (op.category == parallel::OpCategory::copy && op.source_op >= 0) {
            const auto source = static_cast<std::size_t>(op.source_op);
            if (op.to_host) {
                offload_end[source] = spans[i].end;
            } else {
                reload_start[source] = spans[i].start;
            }
        }
        if (!is_compute(op) || op.phase == workload::Phase::optimizer) continue;
        if (starts_layer_backward(op)) {
            auto& start = layers_backward_start[static_cast<std::size_t>(op.microbatch)];
            if (start < 0) start = spans[i].start;
            if (first_backward < 0 || spans[i].start < spans[static_cast<std::size_t>(first_backward)].start)
                first_backward = static_cast<int>(i);
        }
        if (op.param_group >= 0 && static_cast<std::size_t>(op.param_group) < groups) {
            const auto g = static_cast<std::size_t>(op.param_group);
            if (op.layer >= 0) layer_group[g] = true;
            if (op.phase == workload::Phase::backward) {
                const int first = group_grad_first[g];
                if (op.microbatch == 0 &&
                    (first < 0 || spans[i].start < spans[static_cast<std::size_t>(first)].start))
                    group_grad_first[g] = static_cast<int>(i);
                group_grad_end[g] = std::max(group_grad_end[g], spans[i].end);
            }
        }
        if (copies && op.phase == workload::Phase::forward) {
            auto& end = forward_end[layer_slot(op.layer, op.microbatch)];
            end = std::max(end, spans[i].end);
        }
        if (op.phase != workload::Phase::forward) {
            auto& end = backward_end[layer_slot(op.layer, op.microbatch)];
            end = std::max(end, spans[i].end);
        }
        if (op.param_group >= 0) {
            auto& end = last_user_end[group_slot(op.param_group, pass_of(op.phase), op.microbatch)];
            end = std::max(end, spans[i].end);
        }
    }

    // At most six changes per compute op (an offloaded activation, split-K partials), two per
    // collective: each stream is allocated for the most changes it can get (below), and filled
    // without a check of capacity.
    ChangeBuffer streams[kStreams] = {
        ChangeBuffer(3 * compute_ops), ChangeBuffer(2 * compute_ops), ChangeBuffer(compute_ops + gathers),
        // (kOther: an offloaded op's two, and the two of a compute op that starts before an earlier one.)
        ChangeBuffer(2 * groups + 2 + 4 * compute_ops + gathers + 2 * scatters)};
    std::uint32_t seq = 0;
    auto change = [&](Stream stream, core::Time at, double delta, int holder) {
        streams[stream].push({at, delta, seq++, holder});
    };
    int previous = -1;  // previous compute op, whose output the current one consumes
    auto free_temporary = [&](int op_index, core::Time at) {
        const auto& p = ops[static_cast<std::size_t>(op_index)];
        if (output_is_temporary(p)) change(kComputeEnds, at, -p.output_bytes, kTemporaries);
    };
    // Gradients: from the start of the layers' backward (of the first microbatch) to the end.
    // Gradients. The scanned layers' are the backward loop's accumulators, allocated all at once when
    // it starts; unrolled, each layer's when its backward writes them. The groups outside the layers
    // get theirs when their backward writes them; the head's backward runs before the layers', and
    // with one microbatch XLA's scheduler runs its optimizer update at once (it needs nothing else),
    // so its gradient is gone before the layers' backward.
    const core::Time layers_start =
        first_backward >= 0 ? spans[static_cast<std::size_t>(first_backward)].start : -1;
    if (groups == 0) {
        change(kOther, std::max<core::Time>(0, layers_start), fold ? fold->grads_bytes : program.grads_bytes,
               kGrads);
    }
    double outside_layers = 0.0;
    for (std::size_t g = 0; g < groups; ++g) {
        const double bytes = program.group_grads_bytes[g];
        const int first = group_grad_first[g];
        const core::Time start = first >= 0 ? spans[static_cast<std::size_t>(first)].start : 0;
        if (layer_group[g]) {
            // (Folded and unrolled, the spliced layers' backward periods add theirs as a drift.)
            if (!program.stacked_gradients) change(kOther, start, bytes, kGrads);
            continue;
        }
        outside_layers += bytes;
        if (g < program.group_grad_in_dot_output.size() && program.group_grad_in_dot_output[g]) continue;
        const bool cast_of_matmul =
            program.grad_cast_after_weight_matmul && first >= 0 &&
            ops[static_cast<std::size_t>(first)].category == parallel::OpCategory::matmul;
        change(kOther, cast_of_matmul ? spans[static_cast<std::size_t>(first)].end : start, bytes, kGrads);
        if (program.microbatches == 1 && layers_start >= 0 && group_grad_end[g] >= 0 &&
            group_grad_end[g] <= layers_start)
            change(kOther, layers_start, -bytes, kGrads);
    }
    if (groups > 0 && program.stacked_gradients) {
        const double all = fold ? fold->grads_bytes : program.grads_bytes;
        change(kOther, std::max<core::Time>(0, layers_start), all - outside_layers, kGrads);
    }
    bool layers_began = false;    // forward ops of layer -1 after this are the head's
    core::Time latest_start = 0;  // of the compute ops so far
    for (std::size_t i = 0; i < ops.size(); ++i) {
        const auto& op = ops[i];
        const auto& span = spans[i];
        if (is_compute(op)) {
            layers_began = layers_began || op.layer >= 0;
            // Compute ops start in program order, but for the buffers a pipeline stage's view holds
            // after its ops (run/stages.hpp): those go where changes come in any order.
            const Stream starts = span.start < latest_start ? kOther : kComputeStarts;
            latest_start = std::max(latest_start, span.start);
            if (awaits_backward(op)) {
                core::Time end = backward_end[layer_slot(op.layer, op.microbatch)];
                if (op.layer < 0 && layers_began && op.phase == workload::Phase::forward) {
                    const core::Time head_end =
                        layers_backward_start[static_cast<std::size_t>(op.microbatch)];
                    if (head_end >= 0) end = head_end;
                }
                if (op.release_op >= 0) end = spans[static_cast<std::size_t>(op.release_op)].end;
                core::Time free_at = end >= 0 ? std::max(end, span.end) : span.end;
                change(starts, span.start, op.saved_bytes, kActivations);
                if (op.offloaded && offload_end[i] >= 0 && reload_start[i] >= 0) {
                    // Away once its copy to the host is done; XLA's schedule puts that copy-done
                    // within the layer's forward (its memory analysis counts the value on the host
                    // from there), and a slower host link delays the compute, not the memory.
                    const core::Time layer_done = forward_end[layer_slot(op.layer, op.microbatch)];
                    const core::Time away = layer_done >= 0
                                                ? std::min(offload_end[i], std::max(layer_done, span.end))
                                                : offload_end[i];
                    change(kOther, away, -op.saved_bytes, kActivations);
                    change(kOther, reload_start[i], op.saved_bytes, kActivations);
                }
                change(kDeferred, free_at, -op.saved_bytes, kActivations);
            }
            if (output_is_temporary(op)) change(starts, span.start, op.output_bytes, kTemporaries);
            if (op.split_k_bytes > 0.0) {
                // XLA:GPU's partial sums, reduced as the op ends (the reduction fusion that follows
                // the split dot is part of it here).
                change(starts, span.start, op.split_k_bytes, kTemporaries);
                change(kComputeEnds, span.end, -op.split_k_bytes, kTemporaries);
            }
            if (previous >= 0) free_temporary(previous, span.end);
            previous = static_cast<int>(i);
        } else if (op.category == parallel::OpCategory::all_gather && op.param_group >= 0) {
            const core::Time end =
                last_user_end[group_slot(op.param_group, pass_of(op.phase), op.microbatch)];
            core::Time free_at = end >= 0 ? std::max(end, span.end) : span.end;
            change(kOther, span.start, op.collective_bytes, kGathered);
            change(kDeferred, free_at, -op.collective_bytes, kGathered);
        } else if (op.category == parallel::OpCategory::reduce_scatter && op.param_group >= 0) {
            change(kOther, span.start, op.collective_bytes, kCollective);
            change(kOther, span.end, -op.collective_bytes, kCollective);
        }
    }
    if (previous >= 0) free_temporary(previous, spans[static_cast<std::size_t>(previous)].end);

    // Whether every allocation is a whole number of bytes (only MemoryFold::outer needs to know).
    bool whole_bytes = true;
    if (fold && fold->outer) {
        for (const auto& stream : streams)
            for (const Change& c : stream) whole_bytes = whole_bytes && whole(c.delta);
    }
    // Within a stream, creation order is seq order, so a stable sort by (time, delta) is `before`.
    for (auto& stream : streams) {
        if (std::is_sorted(stream.begin(), stream.end(), before)) continue;
        std::stable_sort(stream.begin(), stream.end(), [](const Change& a, const Change& b) {
            if (a.time != b.time) return a.time < b.time;
            return a.delta < b.delta;
        });
    }
    // The streams merged in `before` order (a total order: seq breaks every tie), two at a time:
    // cheaper than picking the least of four heads for every change. The last merge is walked, not
    // stored (below).
    auto merge_two = [](const ChangeBuffer& a, const ChangeBuffer& b) {
        ChangeBuffer out(a.size() + b.size());
        out.set_size(static_cast<std::size_t>(
            std::merge(a.begin(), a.end(), b.begin(), b.end(), out.begin(), before) - out.begin()));
        return out;
    };
    static_assert(kStreams == 4);
    const ChangeBuffer compute = merge_two(streams[0], streams[1]);
    const ChangeBuffer later = merge_two(streams[2], streams[3]);

    MemoryProfile profile;
    profile.capacity_bytes = capacity_bytes;
    const double params = fold ? fold->params_bytes : program.params_bytes;
    const double optimizer = fold ? fold->optimizer_bytes : program.optimizer_bytes;
    const double fixed = params + optimizer;
    double live[kHolders] = {};
    double total = fixed;
    profile.peak_bytes = fixed;
    profile.at_peak.params = params;
    profile.at_peak.optimizer = optimizer;
    auto record_peak = [&](double bytes, core::Time at, const double* holders) {
        profile.peak_bytes = bytes;
        profile.peak_time = at;
        profile.at_peak.activations = holders[kActivations];
        profile.at_peak.gathered_weights = holders[kGathered];
        profile.at_peak.collective_buffers = holders[kCollective];
        profile.at_peak.temporaries = holders[kTemporaries];
        profile.at_peak.grads = holders[kGrads];
    };
    const std::size_t changes = compute.size() + later.size();
    if (!fold) {
        profile.samples.reserve(changes + 1);
        profile.samples.push_back({0, fixed});
    }
    // Splices (folded timelines only): the state when the template period began, the highest point
    // within it, and how far later than the simulated timeline the changes now run.
    const std::vector<scheduler::Splice> no_splices;
    const auto& splices = fold ? fold->splices : no_splices;
    std::size_t next_splice = 0;
    // The next splice's time and its period's start, or never: tested for every change.
    core::Time next_splice_at = core::kMaxTime, next_window_at = core::kMaxTime;
    auto aim_at_next_splice = [&]() {
        const bool any = next_splice < splices.size();
        next_splice_at = any ? splices[next_splice].at : core::kMaxTime;
        next_window_at = any ? splices[next_splice].at - splices[next_splice].period : core::kMaxTime;
    };
    aim_at_next_splice();
    bool in_window = false;
    double window_start[kHolders] = {}, window_start_total = 0.0;
    double window_max = 0.0, window_max_live[kHolders] = {};
    core::Time window_max_time = 0;
    bool window_has_max = false;
    core::Time shift = 0;
    core::Time peak_in_timeline = 0;  // the peak's time in the simulated timeline
    auto start_window = [&]() {
        in_window = true;
        window_has_max = false;
        std::copy(live, live + kHolders, window_start);
        window_start_total = total;
    };
    auto close_splice = [&]() {
        const scheduler::Splice& splice = splices[next_splice];
        if (!in_window) start_window();  // no change within the period: no drift
        const auto repeats = static_cast<double>(splice.copies);
        double drift[kHolders];
        for (int h = 0; h < kHolders; ++h) drift[h] = live[h] - window_start[h];
        const double drift_total = total - window_start_total;
        // Copy i peaks at the period's highest point plus i drifts: only the last copy can set a new
        // peak, and only when the period grows the live bytes (equal ones came first).
        if (drift_total > 0.0 && window_has_max) {
            const double top = window_max + repeats * drift_total;
            if (new_peak(top, profile.peak_bytes)) {
                double holders[kHolders];
                for (int h = 0; h < kHolders; ++h) holders[h] = window_max_live[h] + repeats * drift[h];
                record_peak(top,
                            window_max_time + shift + static_cast<core::Time>(splice.copies) * splice.period,
                            holders);
                peak_in_timeline = window_max_time;
                if (folded_peak) *folded_peak = FoldedPeak{next_splice, splice.copies};
            }
        }
        for (int h = 0; h < kHolders; ++h) live[h] += repeats * drift[h];
        total += repeats * drift_total;
        shift += static_cast<core::Time>(splice.copies) * splice.period;
        in_window = false;
        ++next_splice;
        aim_at_next_splice();
    };
    // The outer period [at - period, at) of the simulated timeline: the live bytes when it begins
    // (before any change at or after its start), and at its end the shift of its copies.
    const scheduler::Splice* outer = fold ? fold->outer : nullptr;
    // Whole bytes below 2^53 add exactly in a double, in any order (the bound is checked on the
    // peak, which no running sum exceeds).
    constexpr double kExactBytes = 9007199254740992.0;
    bool outer_begun = false, outer_ended = false;
    bool outer_repeats = !outer || (whole_bytes && whole(fixed));
    double outer_live[kHolders] = {}, outer_total = 0.0;
    core::Time outer_shift = 0;
    auto outer_boundaries = [&](core::Time next_time) {
        if (!outer || outer_ended) return;
        if (!outer_begun && next_time >= outer->at - outer->period) {
            outer_begun = true;
            std::copy(live, live + kHolders, outer_live);
            outer_total = total;
            outer_shift = shift;
        }
        if (outer_begun && next_time >= outer->at) {
            outer_ended = true;
            outer_repeats = outer_repeats && total == outer_total;
            for (int h = 0; h < kHolders; ++h) outer_repeats = outer_repeats && live[h] == outer_live[h];
            // One copy lasts the period with the splices inside it.
            const core::Time expanded = outer->period + (shift - outer_shift);
            shift += static_cast<core::Time>(outer->copies) * expanded;
        }
    };
    for (std::size_t from_compute = 0, from_later = 0; from_compute + from_later < changes;) {
        // As std::merge takes them: from `later` only when it comes strictly first.
        const bool take_later =
            from_later < later.size() &&
            (from_compute == compute.size() || before(later[from_later], compute[from_compute]));
        const Change& c = take_later ? later[from_later++] : compute[from_compute++];
        if (c.delta == 0.0) continue;
        while (c.time >= next_splice_at && next_splice < splices.size()) close_splice();
        outer_boundaries(c.time);
        if (!in_window && c.time >= next_window_at && next_splice < splices.size()) start_window();
        live[c.holder] += c.delta;
        total += c.delta;
        if (!fold) {
            if (profile.samples.back().time == c.time) {
                profile.samples.back().live_bytes = total;
            } else {
                profile.samples.push_back({c.time, total});
            }
        }
        if (in_window && (!window_has_max || new_peak(total, window_max))) {
            window_has_max = true;
            window_max = total;
            window_max_time = c.time;
            std::copy(live, live + kHolders, window_max_live);
        }
        if (new_peak(total, profile.peak_bytes)) {
            record_peak(total, c.time + shift, live);
            peak_in_timeline = c.time;
            if (folded_peak) *folded_peak = FoldedPeak{0, 0};
        }
    }
    while (next_splice < splices.size()) close_splice();
    outer_boundaries(core::kMaxTime);
    // The whole step's running sums stay below 2^53 too.
    if (outer && std::abs(profile.peak_bytes) >= kExactBytes) outer_repeats = false;
    if (folded_peak) folded_peak->outer_repeats = outer_repeats;
    // The compute op running at the peak; while compute waits (a synchronous collective), the op
    // it waits on.
    for (const bool want_compute : {true, false}) {
        for (std::size_t i = 0; i < ops.size() && profile.peak_op < 0; ++i) {
            if (is_compute(ops[i]) == want_compute && ops[i].category != parallel::OpCategory::host &&
                spans[i].start <= peak_in_timeline && peak_in_timeline < spans[i].end)
                profile.peak_op = static_cast<int>(i);
        }
    }
    profile.fits = profile.peak_bytes <= capacity_bytes;
    profile.overflow_bytes = profile.fits ? 0.0 : profile.peak_bytes - capacity_bytes;
    return profile;
}

// Any schedule holds, when the layers' backward of a microbatch starts, the parameters, gradients
// (allocated there at the latest) and optimizer state and every residual the layers' forward ops of
// that microbatch keep in HBM (a kept op's residuals are live from its start until its layer's
// backward ends, and the backward of every layer starts after the last forward op); the profile's
// peak is at least that sum, and none of it depends on the prefetch depth. (The embedding's and
// the head's residuals are left out: the head's are gone by then.)
double least_peak_bytes(const parallel::DeviceProgram& program, const LeastPeakFold* fold) {
    // Gradients there for sure: the scanned layers' accumulators (unrolled, they come one layer at a
    // time; the other groups' come and go around the layers' backward).
    double outside_layers = 0.0;
    std::vector<bool> in_layer(program.group_grads_bytes.size(), false);
    for (const auto& op : program.ops) {
        if (op.param_group >= 0 && static_cast<std::size_t>(op.param_group) < in_layer.size() &&
            op.layer >= 0)
            in_layer[static_cast<std::size_t>(op.param_group)] = true;
    }
    for (std::size_t g = 0; g < in_layer.size(); ++g)
        if (!in_layer[g]) outside_layers += program.group_grads_bytes[g];
    const double grads =
        program.stacked_gradients ? (fold ? fold->grads : program.grads_bytes) - outside_layers : 0.0;
    const double fixed = (fold ? fold->fixed : program.params_bytes + program.optimizer_bytes) + grads;
    // Outputs whose layer has no backward op are freed when their op ends: not counted.
    int min_layer = 0, max_layer = 0, microbatches = 1;
    for (const auto& op : program.ops) {
        min_layer = std::min(min_layer, op.layer);
        max_layer = std::max(max_layer, op.layer);
        microbatches = std::max(microbatches, op.microbatch + 1);
    }
    auto slot = [&](const parallel::DeviceOp& op) {
        return static_cast<std::size_t>(op.layer - min_layer) * static_cast<std::size_t>(microbatches) +
               static_cast<std::size_t>(op.microbatch);
    };
    std::vector<bool> has_backward(static_cast<std::size_t>(max_layer - min_layer + 1) *
                                   static_cast<std::size_t>(microbatches));
    for (const auto& op : program.ops) {
        if (is_compute(op) && op.phase != workload::Phase::forward && op.phase != workload::Phase::optimizer)
            has_backward[slot(op)] = true;
    }
    std::vector<double> kept(static_cast<std::size_t>(microbatches), 0.0);  // per microbatch
    for (const auto& op : program.ops) {
        if (is_compute(op) && op.phase == workload::Phase::forward && op.kept_for_backward && !op.offloaded &&
            op.layer >= 0 && has_backward[slot(op)])
            kept[static_cast<std::size_t>(op.microbatch)] +=
                fold && op.layer == fold->layer ? (1.0 + fold->extra) * op.saved_bytes : op.saved_bytes;
    }
    double least_peak = fixed;
    for (double bytes : kept) least_peak = std::max(least_peak, fixed + bytes);
    return least_peak;
}

}  // namespace podsim::memory
