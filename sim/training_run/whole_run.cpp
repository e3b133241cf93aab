#include "training_run/whole_run.hpp"

#include <algorithm>
#include <array>
#include <climits>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>
#include <random>

#include <fmt/format.h>

#include "core/assert.hpp"
#include "core/diagnostics.hpp"
#include "core/quantity.hpp"
#include "run/simulate.hpp"
#include "training_run/programs.hpp"

namespace podsim::training_run {

std::string_view track_name(Track track) {
    switch (track) {
        case Track::host:
            return "host";
        case Track::loader:
            return "input loader";
        case Track::runtime:
            return "runtime";
        case Track::device:
            return "device";
        case Track::to_device:
            return "host->device";
        case Track::from_device:
            return "device->host";
    }
    return "?";
}

Overlap effective_overlap(const RunPlan& plan) {
    return plan.overlap.value_or(Overlap::run_post_order_and_fetch);
}

StepPattern StepPattern::of(const RunPlan& plan) {
    StepPattern p;
    p.train_steps = plan.train_steps;
    p.eval_every = plan.eval.every;
    p.eval_steps = plan.eval.steps;
    p.log_every = plan.log_every;
    p.unlowered_ops = plan.unlowered_ops;
    p.host_transfers_per_eval_step =
        plan.eval.accumulate == Accumulate::host ? plan.eval.accumulated_tensors : 0;
    return p;
}

long StepPattern::evaluations() const {
    if (eval_every == 0 || train_steps == 0) return 1;
    return train_steps / eval_every;
}

std::pair<long, long> StepPattern::phase_counts(long step) const {
    const long n = step + 1;  // steps 0..step
    if (eval_every > 0 && train_steps > 0) {
        // Blocks of eval_every train steps and eval_steps eval steps, then the train steps left.
        const long block = eval_every + eval_steps;
        const long blocks = train_steps / eval_every;
        if (n <= blocks * block) {
            const long b = n / block, r = n % block;
            return {b * eval_every + std::min(r, eval_every), b * eval_steps + std::max(0L, r - eval_every)};
        }
        return {std::min(train_steps, blocks * eval_every + (n - blocks * block)), blocks * eval_steps};
    }
    return {std::min(n, train_steps), std::max(0L, n - train_steps)};
}

long StepPattern::from_device_through(long step) const {
    const auto [train, eval] = phase_counts(step);
    return unlowered_ops * (step + 1) + (log_every > 0 ? train / log_every : 0) +
           host_transfers_per_eval_step * eval;
}

StepCounts WholeRun::counts_at(long step) const {
    StepCounts c;
    c.index = std::clamp(step, 0L, std::max(0L, total_steps() - 1));
    auto it = std::upper_bound(compile_steps.begin(), compile_steps.end(), std::make_pair(c.index, LONG_MAX));
    c.compiles = it == compile_steps.begin() ? 0 : std::prev(it)->second;
    c.from_device = pattern.from_device_through(c.index);
    return c;
}

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
// Steps of one probed period at most (each keeps its weights while it runs); longer periods run
// step by step.
constexpr long kMaxProbedSteps = 100'000;
constexpr long kCompileWarmupSteps = 10;  // torch_xla metrics_analysis.cpp: MetricFrequency warm-up
// ... and its threshold, more than 0.5 per step (written below as 2 x count > steps).

std::string compile_line(long compiles, long steps) {
    return fmt::format("pt-xla-profiler: CompileTime too frequent: {} counts during {} steps", compiles,
                       steps);
}
std::string transfer_line(long transfers, long steps) {
    return fmt::format("pt-xla-profiler: TransferFromServerTime too frequent: {} counts during {} steps",
                       transfers, steps);
}
bool compile_line_at(long compiles, long steps) {
    return steps > kCompileWarmupSteps && 2 * compiles > steps;
}
bool transfer_line_at(long transfers, long steps) {
    return 2 * transfers > steps;
}

}  // namespace

std::vector<std::string> WholeRun::debug_lines_at(long step) const {
    std::vector<std::string> lines;
    if (!framework.starts_with("pytorch-xla") || step < 0 || step >= total_steps()) return lines;
    const StepCounts c = counts_at(step);
    if (compile_line_at(c.compiles, step + 1)) lines.push_back(compile_line(c.compiles, step + 1));
    if (transfer_line_at(c.from_device, step + 1)) lines.push_back(transfer_line(c.from_device, step + 1));
    return lines;
}

namespace {

// The whole run's simulation state has one coordinate per track (when it is next free) and one
// for the end of the last step. Within a step, every task starts when its track is free and what
// it depends on has ended; tasks are added in an order where both come first, so each task's
// times follow at once (what a discrete-event simulation of the tracks would find, in one pass).
constexpr int kCoords = kTracks + 1;
constexpr int kLastStepEnd = kTracks;

// Max-plus weights of a time over the state at the start of a period: the time is the largest of
// state[j] + weight[j]; kUnreached where it does not depend on state[j]. A period whose weights
// show every coordinate advancing at its own constant rate repeats exactly (see try_jump).
using Weights = std::array<core::Time, kCoords>;
constexpr core::Time kUnreached = std::numeric_limits<core::Time>::min();

Weights unit_weights(int coordinate) {
    Weights w;
    w.fill(kUnreached);
    w[static_cast<std::size_t>(coordinate)] = 0;
    return w;
}
void max_into(Weights& into, const Weights& w) {
    for (std::size_t j = 0; j < into.size(); ++j) into[j] = std::max(into[j], w[j]);
}
Weights plus(Weights w, core::Time duration) {
    for (auto& x : w) {
        if (x != kUnreached) x = core::add_times(x, duration);
    }
    return w;
}

enum class MetricId { none, compile, execute, to_server, from_server };
constexpr int kMetricIds = 5;
constexpr std::array<const char*, kMetricIds> kMetricNames = {
    "", "CompileTime", "ExecuteTime", "TransferToServerTime", "TransferFromServerTime"};

// Everything the run adds up, in integer picoseconds so that a period added m times is exact.
struct Totals {
    std::array<long, kMetricIds> metric_count{};
    std::array<core::Time, kMetricIds> metric_time{};
    core::Time train_time = 0, eval_time = 0;
    core::Time steady_train = 0, steady_eval = 0;  // steps in the steady windows
    long steady_train_steps = 0, steady_eval_steps = 0;
    core::Time gaps = 0, steady_gaps = 0;
    long gap_count = 0, steady_gap_count = 0;

    template <typename F>
    void each(const Totals& other, F&& f) {
        for (int i = 0; i < kMetricIds; ++i) {
            f(metric_count[static_cast<std::size_t>(i)], other.metric_count[static_cast<std::size_t>(i)]);
            f(metric_time[static_cast<std::size_t>(i)], other.metric_time[static_cast<std::size_t>(i)]);
        }
        for (auto [a, b] : {std::pair<core::Time*, const core::Time*>{&train_time, &other.train_time},
                            {&eval_time, &other.eval_time},
                            {&steady_train, &other.steady_train},
                            {&steady_eval, &other.steady_eval},
                            {&gaps, &other.gaps},
                            {&steady_gaps, &other.steady_gaps}})
            f(*a, *b);
        for (auto [a, b] : {std::pair<long*, const long*>{&steady_train_steps, &other.steady_train_steps},
                            {&steady_eval_steps, &other.steady_eval_steps},
                            {&gap_count, &other.gap_count},
                            {&steady_gap_count, &other.steady_gap_count}})
            f(*a, *b);
    }
};

// Products of counts and periods in the closed-form PT_XLA_DEBUG count need more than 64 bits.
__extension__ typedef __int128 Wide;

// `a + m x b`, or TimeOverflow when it passes what int64 holds.
template <typename T>
T add_multiple(T a, T b, long m) {
    T product = 0, sum = 0;
    if (__builtin_mul_overflow(b, static_cast<T>(m), &product) || __builtin_add_overflow(a, product, &sum))
        throw core::TimeOverflow("the simulated time passes the limit of int64 picoseconds (about 106 days)");
    return sum;
}

// Sequence length of each batch. std::mt19937_64 is specified exactly by the standard, and the
// draws below use only its raw output, so every platform gets the same lengths.
class LengthSampler {
  public:
    LengthSampler(const SequenceLengths& lengths, int configured, std::uint64_t seed)
        : l_(lengths), configured_(configured), rng_(seed) {}

    // The shortest length a batch can get.
    int shortest() const {
        switch (l_.distribution) {
            case LengthDistribution::fixed:
                return configured_;
            case LengthDistribution::buckets:
                return *std::min_element(l_.buckets.begin(), l_.buckets.end());
            case LengthDistribution::uniform:
            case LengthDistribution::normal:
                break;
        }
        if (l_.padding == Padding::max) return l_.max;
        if (l_.padding == Padding::bucket) {
            for (int b : l_.buckets) {
                if (b >= l_.min) return b;
            }
            return l_.max;
        }
        return l_.min;
    }

    // Whether every batch gets the same length, whatever the draws.
    bool constant() const {
        if (l_.distribution == LengthDistribution::fixed) return true;
        if (l_.distribution == LengthDistribution::buckets) return l_.buckets.size() == 1;
        return l_.padding == Padding::max || (l_.padding == Padding::bucket && l_.buckets.size() == 1);
    }

    int batch_length(long samples) {
        int length = 0;
        switch (l_.distribution) {
            case LengthDistribution::fixed:
                return configured_;
            case LengthDistribution::buckets:
                return l_.buckets[pick_bucket()];
            case LengthDistribution::uniform:
            case LengthDistribution::normal:
                length = longest(samples);
                break;
        }
        switch (l_.padding) {
            case Padding::none:
                return length;
            case Padding::max:
                return l_.max;
            case Padding::bucket:
                for (int b : l_.buckets) {
                    if (b >= length) return b;
                }
                return l_.max;
        }
        return length;
    }

  private:
    // Up to this many samples a batch draws each (the draws the validation cases ran with); a
    // larger batch draws its longest sample at once from the distribution of the maximum of n
    // samples, F(k)^n, which costs the same for any batch.
    static constexpr long kSamplesDrawnOneByOne = 64;

    double unit() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }  // [0, 1)
    int sample() {
        if (l_.distribution == LengthDistribution::uniform) {
            return l_.min + static_cast<int>(rng_() % static_cast<std::uint64_t>(l_.max - l_.min + 1));
        }
        // Box-Muller, clipped to [min, max].
        const double u1 = 1.0 - unit(), u2 = unit();
        const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
        const double x = std::round(l_.mean + l_.stddev * z);
        return static_cast<int>(std::clamp(x, static_cast<double>(l_.min), static_cast<double>(l_.max)));
    }
    // P(one sample <= k), k in [min, max].
    double cdf(int k) const {
        if (k >= l_.max) return 1.0;
        if (l_.distribution == LengthDistribution::uniform)
            return static_cast<double>(k - l_.min + 1) / static_cast<double>(l_.max - l_.min + 1);
        // round(mean + stddev z) <= k  <=>  z < (k + 0.5 - mean) / stddev; below min counts as min.
        if (!(l_.stddev > 0.0)) return std::round(l_.mean) <= k ? 1.0 : 0.0;
        return 0.5 * std::erfc(-(k + 0.5 - l_.mean) / (l_.stddev * M_SQRT2));
    }
    int longest(long samples) {
        if (samples <= kSamplesDrawnOneByOne) {
            int length = 0;
            for (long i = 0; i < samples; ++i) length = std::max(length, sample());
            return length;
        }
        // The smallest k with F(k)^n >= u: inverse transform sampling of the maximum.
        const double u = unit();
        const double n = static_cast<double>(samples);
        int lo = l_.min, hi = l_.max;
        while (lo < hi) {
            const int mid = lo + (hi - lo) / 2;
            if (std::pow(cdf(mid), n) >= u)
                hi = mid;
            else
                lo = mid + 1;
        }
        return lo;
    }
    std::size_t pick_bucket() {
        PODSIM_ASSERT(!l_.buckets.empty(), "a bucket distribution without buckets");
        if (l_.weights.size() != l_.buckets.size())
            return static_cast<std::size_t>(rng_() % l_.buckets.size());
        double total = 0.0;
        for (double w : l_.weights) total += w;
        double x = unit() * total;
        for (std::size_t i = 0; i < l_.weights.size(); ++i) {
            if (x < l_.weights[i]) return i;
            x -= l_.weights[i];
        }
        return l_.weights.size() - 1;
    }

    const SequenceLengths& l_;
    int configured_;
    std::mt19937_64 rng_;
};

// One step to run: which phase, its program, what follows it.
struct StepSpec {
    bool eval = false;
    ProgramKey key;
    bool log_sync = false;
    bool train_window = false;  // in the steady window of its phase (train or eval)
    bool eval_window = false;
    bool gap_window = false;  // its gaps count towards the steady gap
};

class Simulator {
  public:
    Simulator(const run::RunSpec& spec, const RunPlan& plan, WholeRun& w)
        : spec_(spec), plan_(plan), w_(w), library_(spec, plan), cal_(spec.calibration) {
        pytorch_ = parallel::is_pytorch_xla(spec.runtime.framework);
        overlap_ = effective_overlap(plan);
        state_.fill(0);
    }

    // Runs one step: its input, then each part of its graph (one unless ops without a lowering
    // split it), then the syncs that follow it.
    void run_step(const StepSpec& s) {
        ends_.clear();
        if (probing_) end_weights_.clear();
        step_compiles_ = step_transfers_ = 0;
        step_compiled_ = false;
        gap_window_ = s.gap_window;
        const int end_task = add_step(s);
        const core::Time end = ends_[static_cast<std::size_t>(end_task)];
        const core::Time previous_end = state_[kLastStepEnd];
        const core::Time duration = end - previous_end;
        if (probing_) {
            differences_.push_back({end_weights_[static_cast<std::size_t>(end_task)], end,
                                    state_weights_[kLastStepEnd], previous_end});
            max_into(state_weights_[kLastStepEnd], end_weights_[static_cast<std::size_t>(end_task)]);
        }
        state_[kLastStepEnd] = std::max(previous_end, end);
        (s.eval ? totals_.eval_time : totals_.train_time) += duration;
        if (s.train_window) {
            totals_.steady_train += duration;
            ++totals_.steady_train_steps;
        }
        if (s.eval_window) {
            totals_.steady_eval += duration;
            ++totals_.steady_eval_steps;
        }
        compiled_ += step_compiles_;
        transferred_ += step_transfers_;
        if (step_compiles_ > 0) w_.compile_steps.emplace_back(step_, compiled_);
        if (probing_) probe_transferred_.push_back(transferred_);
        // PT_XLA_DEBUG's analysis after every mark_step (torch_xla runtime/metrics_analysis.cpp): a
        // metric whose process-wide count exceeds half the steps; CompileTime only after 10 warm-up
        // steps.
        if (pytorch_) {
            const long steps = step_ + 1;
            if (compile_line_at(compiled_, steps)) debug_line(compile_line(compiled_, steps));
            if (transfer_line_at(transferred_, steps)) debug_line(transfer_line(transferred_, steps));
        }
        if (recording()) {
            StepRecord r;
            r.index = step_;
            r.eval = s.eval;
            r.end = end;
            r.duration_s = core::to_seconds(duration);
            r.compiled = step_compiled_;
            r.program = w_.programs[static_cast<std::size_t>(last_program_index_)].name;
            r.compiles_so_far = compiled_;
            r.from_device_so_far = transferred_;
            w_.steps.push_back(std::move(r));
        }
        ++step_;
        ++w_.simulated_steps;
    }

    // Probing a period: the caller runs its steps after begin_probe(), and jump() then adds up to
    // `max_periods` more of it in closed form when it repeats exactly.
    void begin_probe() {
        probing_ = true;
        probe_start_ = state_;
        probe_totals_ = totals_;
        probe_step_ = step_;
        probe_programs_ = w_.programs.size();
        probe_compiled_ = compiled_;
        probe_transferred_.clear();
        probe_transferred_before_ = transferred_;
        differences_.clear();
        for (int i = 0; i < kCoords; ++i) state_weights_[static_cast<std::size_t>(i)] = unit_weights(i);
    }

    // After a probed period: when it repeats exactly, adds `max_periods` more of it and returns how
    // many; 0 when it does not repeat. TimeOverflow when the state would pass the time limit.
    long jump(long max_periods) {
        probing_ = false;
        if (max_periods <= 0 || w_.programs.size() != probe_programs_ || compiled_ != probe_compiled_)
            return 0;
        Weights rate;
        for (std::size_t i = 0; i < kCoords; ++i) rate[i] = state_[i] - probe_start_[i];
        // Each coordinate (and each step end and gap the totals take) must advance by the same
        // amount every period: its latest term is among the fastest-growing terms it depends on.
        auto rate_of = [&](const Weights& w, core::Time value) -> std::optional<core::Time> {
            std::optional<core::Time> r;
            for (std::size_t j = 0; j < kCoords; ++j) {
                if (w[j] != kUnreached && probe_start_[j] + w[j] == value)
                    r = std::max(r.value_or(rate[j]), rate[j]);
            }
            if (!r) return std::nullopt;
            for (std::size_t j = 0; j < kCoords; ++j) {
                if (w[j] != kUnreached && rate[j] > *r) return std::nullopt;
            }
            return r;
        };
        for (std::size_t i = 0; i < kCoords; ++i) {
            if (rate_of(state_weights_[i], state_[i]) != rate[i]) return 0;
        }
        for (const auto& d : differences_) {
            auto a = rate_of(d.later, d.later_value), b = rate_of(d.earlier, d.earlier_value);
            if (!a || a != b) return 0;
        }
        const long period = step_ - probe_step_;
        const long m = max_periods;
        // The state after m more periods must be representable (add_multiple throws otherwise: the
        // run is too long).
        for (std::size_t i = 0; i < kCoords; ++i) state_[i] = add_multiple(state_[i], rate[i], m);
        Totals delta = totals_;
        delta.each(probe_totals_, [](auto& a, const auto& b) { a -= b; });
        totals_.each(delta, [m](auto& a, const auto& b) { a = add_multiple(a, b, m); });
        jump_debug_lines(period, m);
        step_ += m * period;
        return m;
    }

    // The shortest device time a step of this kind can take: the step at the shortest sequence
    // and the smallest batch the plan can give it (more tokens never take the device less time).
    core::Time least_device_time(ProgramKind kind, int seq_len, long batch) {
        const auto& shape = library_.step(seq_len, batch);
        const core::Time whole = kind == ProgramKind::train ? shape.step_time : shape.forward_span;
        const long parts = plan_.unlowered_ops + 1;  // each part is whole / parts, rounded down
        return whole / parts * parts;
    }

    long step() const { return step_; }
    const Totals& totals() const { return totals_; }
    long debug_lines() const { return debug_lines_; }
    std::vector<std::string> last_lines() const { return {last_lines_.begin(), last_lines_.end()}; }
    void finish() {
        // Each track's last task ended when the track became free: the latest of those ends the run.
        w_.run_time_s = core::to_seconds(*std::max_element(state_.begin(), state_.begin() + kTracks));
    }

  private:
    bool recording() const { return step_ < kRecordedSteps; }

    void debug_line(std::string line) {
        ++debug_lines_;
        if (recording()) w_.debug_lines.push_back(line);
        push_last(std::move(line));
    }
    void push_last(std::string line) {
        if (last_lines_.size() == 3) last_lines_.erase(last_lines_.begin());
        last_lines_.push_back(std::move(line));
    }

    // The PT_XLA_DEBUG lines of m periods after the probed one, without running them: compilations
    // stay where they are, and each step's transfers grow by the period's every period, so each
    // line holds for a range of periods.
    void jump_debug_lines(long period, long m) {
        if (!pytorch_) return;
        const long transfers_per_period = transferred_ - probe_transferred_before_;
        struct Line {
            long step;
            bool transfer;
            long count;
        };
        std::vector<Line> last;
        long lines = 0;
        // Periods k in [0, m) with a + k * b > 0 (integers; b may be of either sign or zero).
        auto periods_where_positive = [m](Wide a, Wide b) -> std::pair<long, long> {
            if (b == 0) return a > 0 ? std::pair<long, long>{0, m - 1} : std::pair<long, long>{0, -1};
            // a + k b > 0  <=>  k > -a / b (b > 0)  or  k < -a / b (b < 0).
            auto floor_div = [](Wide x, Wide y) {
                Wide q = x / y;
                if ((x % y != 0) && ((x < 0) != (y < 0))) --q;
                return q;
            };
            if (b > 0) {
                const Wide from = floor_div(-a, b) + 1;
                return {static_cast<long>(std::max<Wide>(0, from)), m - 1};
            }
            // a + k b > 0  <=>  k < a / (-b): the largest such k is ceil(a / (-b)) - 1.
            const Wide to = -floor_div(-a, -b) - 1;
            return {0, static_cast<long>(std::min<Wide>(m - 1, to))};
        };
        for (long j = 0; j < period; ++j) {
            // Step j of the k-th period after the probe: its 1-based count n0 + k * period.
            const long n0 = step_ + j + 1;
            const long x0 = probe_transferred_[static_cast<std::size_t>(j)] + transfers_per_period;
            // CompileTime: n > 10 and 2 C > n.
            {
                auto [from, to] = periods_where_positive(static_cast<Wide>(n0) - kCompileWarmupSteps, period);
                auto [from2, to2] = periods_where_positive(2 * static_cast<Wide>(compiled_) - n0, -period);
                from = std::max(from, from2);
                to = std::min(to, to2);
                if (from <= to) {
                    lines += to - from + 1;
                    for (long k = std::max(from, to - 2); k <= to; ++k)
                        last.push_back({n0 - 1 + k * period, false, compiled_});
                }
            }
            // TransferFromServerTime: 2 X > n, X = x0 + k * per period.
            {
                auto [from, to] = periods_where_positive(
                    2 * static_cast<Wide>(x0) - n0, 2 * static_cast<Wide>(transfers_per_period) - period);
                if (from <= to) {
                    lines += to - from + 1;
                    for (long k = std::max(from, to - 2); k <= to; ++k)
                        last.push_back({n0 - 1 + k * period, true, x0 + k * transfers_per_period});
                }
            }
        }
        debug_lines_ += lines;
        std::sort(last.begin(), last.end(), [](const Line& a, const Line& b) {
            return a.step != b.step ? a.step < b.step : a.transfer < b.transfer;
        });
        if (last.size() > 3) last.erase(last.begin(), last.end() - 3);
        for (const auto& l : last)
            push_last(l.transfer ? transfer_line(l.count, l.step + 1) : compile_line(l.count, l.step + 1));
        transferred_ += m * transfers_per_period;
    }
    int add_step(const StepSpec& s) {
        ProgramKey key = s.key;
        const double tokens =
            static_cast<double>(key.batch) *
            spec_.model.tokens_per_sample(key.seq_len > 0 ? key.seq_len : spec_.training.seq_len);
        const double input_bytes = plan_.input_bytes.value_or(
            spec_.model.is_vit() ? static_cast<double>(key.batch) * spec_.model.channels *
                                       spec_.model.image_size * spec_.model.image_size * 4.0
                                 : tokens * 4.0);  // int32 token ids
        const int load = add(Track::loader, "input pipeline", seconds(plan_.input_host_time), {});
        int back =
            add(Track::to_device, "input copy", transfer(input_bytes), {load}, -1, MetricId::to_server);
        const int parts = plan_.unlowered_ops + 1;
        int exec = -1;
        for (int part = 0; part < parts; ++part) {
            key.part = part;
            auto known = program_index_.find(key);
            const bool miss = known == program_index_.end();
            int index = 0;
            if (miss) {
                index = static_cast<int>(w_.programs.size());
                w_.programs.push_back(library_.get(key));
                program_index_.emplace(key, index);
                step_compiled_ = true;
            } else {
                index = known->second;
            }
            const Program& program = w_.programs[static_cast<std::size_t>(index)];
            Deps exec_deps = host_work(program, index, miss);
            exec_deps.push(back);
            exec_deps.push(kPreviousExecution);
            exec = add(Track::device, nullptr, program.device_time, exec_deps, index, MetricId::execute);
            last_program_index_ = index;
            if (part + 1 < parts) {
                // An op without a lowering: its input to the host, the op there, its output back.
                const int out = add(Track::from_device, "unlowered op input", transfer(plan_.unlowered_bytes),
                                    {exec}, -1, MetricId::from_server);
                const int cpu =
                    add(Track::host, "op without lowering (CPU)", seconds(cal_.cpu_op_time), {out});
                back = add(Track::to_device, "unlowered op output", transfer(plan_.unlowered_bytes), {cpu},
                           -1, MetricId::to_server);
            }
        }
        int end = exec;
        if (s.log_sync) {
            const int t =
                add(Track::from_device, "loss.item()", transfer(4.0), {exec}, -1, MetricId::from_server);
            end = add(Track::host, "wait (sync)", 0, {t});
        }
        if (s.eval && plan_.eval.accumulate == Accumulate::host) {
            int t = exec;
            const double bytes = static_cast<double>(key.batch) * plan_.eval.accumulated_bytes_per_sample;
            for (int i = 0; i < plan_.eval.accumulated_tensors; ++i) {
                t = add(Track::from_device, "result to host", transfer(bytes), {exec, t}, -1,
                        MetricId::from_server);
            }
            end = add(Track::host, "wait (sync)", 0, {t});
        }
        return end;
    }

    // What a task waits for besides its track: tasks of this step, or the previous execution.
    static constexpr int kPreviousExecution = -1;
    struct Deps {
        std::array<int, 4> ids{};
        int n = 0;
        Deps() = default;
        Deps(std::initializer_list<int> list) {
            for (int id : list) push(id);
        }
        void push(int id) {
            PODSIM_ASSERT(n < static_cast<int>(ids.size()), "a whole-run task with too many dependencies");
            ids[static_cast<std::size_t>(n++)] = id;
        }
    };

    static core::Time seconds(double s) { return core::from_seconds(s); }
    core::Time transfer(double bytes) const {
        return core::from_seconds(cal_.transfer_latency + cal_.transfer_per_mib * bytes / kMiB);
    }

    // Adds a task that starts when its track is free and its dependencies have ended; returns its
    // index in the step. A null name is the program's.
    int add(Track track, const char* name, core::Time duration, Deps deps, int program = -1,
            MetricId metric = MetricId::none) {
        const auto t = static_cast<std::size_t>(track);
        const core::Time previous_execution = state_[static_cast<std::size_t>(Track::device)];
        core::Time start = state_[t];
        for (int i = 0; i < deps.n; ++i) {
            const int d = deps.ids[static_cast<std::size_t>(i)];
            start = std::max(
                start, d == kPreviousExecution ? previous_execution : ends_[static_cast<std::size_t>(d)]);
        }
        const core::Time end = core::add_times(start, duration);
        Weights start_weights;
        if (probing_) {
            start_weights = state_weights_[t];
            for (int i = 0; i < deps.n; ++i) {
                const int d = deps.ids[static_cast<std::size_t>(i)];
                max_into(start_weights, d == kPreviousExecution
                                            ? state_weights_[static_cast<std::size_t>(Track::device)]
                                            : end_weights_[static_cast<std::size_t>(d)]);
            }
            end_weights_.push_back(plus(start_weights, duration));
        }
        if (track == Track::device) {
            // The gap since the previous execution ended.
            if (executed_) {
                const core::Time gap = start - previous_execution;
                totals_.gaps += gap;
                ++totals_.gap_count;
                if (gap_window_) {
                    totals_.steady_gaps += gap;
                    ++totals_.steady_gap_count;
                }
                if (probing_)
                    differences_.push_back({start_weights, start,
                                            state_weights_[static_cast<std::size_t>(Track::device)],
                                            previous_execution});
            }
            executed_ = true;
        }
        state_[t] = end;
        if (probing_) state_weights_[t] = end_weights_.back();
        ends_.push_back(end);
        if (metric != MetricId::none) {
            ++totals_.metric_count[static_cast<std::size_t>(metric)];
            totals_.metric_time[static_cast<std::size_t>(metric)] += duration;
            if (metric == MetricId::compile) ++step_compiles_;
            if (metric == MetricId::from_server) ++step_transfers_;
        }
        if (recording() && end > start) {
            w_.activities.push_back(
                {track, name ? std::string(name) : w_.programs[static_cast<std::size_t>(program)].name, step_,
                 program, start, end});
        }
        return static_cast<int>(ends_.size()) - 1;
    }

    // Host work before an execution; returns what the execution waits for.
    Deps host_work(const Program& p, int index, bool miss) {
        const double ops = p.ops;
        const bool executed = executed_;
        auto after_previous = [&]() { return executed ? Deps{kPreviousExecution} : Deps{}; };
        auto compile = [&]() {
            if (plan_.cache == CompileCache::persistent) {
                add(Track::host, "load from compile cache", seconds(cal_.cache_load_per_op * ops), {}, index);
            } else {
                add(Track::host, "compile", seconds(p.compile_s), {}, index, MetricId::compile);
            }
        };
        if (spec_.runtime.host_overhead) {
            // The host as a constant per step (today's single-step model): PyTorch/XLA traces before
            // the device starts and waits for it; JAX dispatches ahead.
            if (miss) compile();
            return {add(Track::host, "host overhead (runtime.host_overhead)",
                        seconds(*spec_.runtime.host_overhead), pytorch_ ? after_previous() : Deps{})};
        }
        if (!pytorch_) {
            if (miss) {
                add(Track::host, "trace (jit)", seconds(cal_.trace_per_op_jax * ops), {}, index);
                compile();
            }
            return {
                add(Track::host, "dispatch",
                    seconds(cal_.dispatch_per_executable_jax + cal_.dispatch_per_argument_jax * p.arguments),
                    {}, index)};
        }
        // PyTorch/XLA: tracing runs while the previous execution does (lazy tensors, asynchronous
        // execution); then SyncTensorsGraph hashes, compiles on a miss, and RunPostOrder and
        // FetchTensorData either wait for the previous execution or overlap it.
        add(Track::host, "trace (lazy IR)", seconds(cal_.trace_per_op_pytorch_xla * ops), {}, index);
        add(Track::host, "hash + cache lookup", seconds(cal_.hash_per_op_pytorch_xla * ops), {}, index);
        if (miss) compile();
        const bool post_order_waits = overlap_ == Overlap::none;
        const bool fetch_waits = overlap_ != Overlap::run_post_order_and_fetch;
        add(Track::host, "RunPostOrder", seconds(cal_.post_order_per_op_pytorch_xla * ops),
            post_order_waits ? after_previous() : Deps{}, index);
        const int fetch =
            add(Track::host, "FetchTensorData", seconds(cal_.fetch_per_tensor_pytorch_xla * p.tensors),
                fetch_waits ? after_previous() : Deps{}, index);
        Deps launch_deps{fetch};
        if (executed) launch_deps.push(kPreviousExecution);
        return {add(Track::runtime, "launch", seconds(cal_.launch_per_execution_pytorch_xla), launch_deps,
                    index)};
    }

    const run::RunSpec& spec_;
    const RunPlan& plan_;
    WholeRun& w_;
    ProgramLibrary library_;
    const cost::Calibration& cal_;
    bool pytorch_ = false;
    Overlap overlap_ = Overlap::run_post_order_and_fetch;
    std::map<ProgramKey, int> program_index_;

    std::array<core::Time, kCoords> state_{};
    Totals totals_;
    std::vector<core::Time> ends_;  // of this step's tasks
    long step_ = 0;
    bool executed_ = false;
    bool gap_window_ = false;
    long compiled_ = 0, transferred_ = 0;
    long step_compiles_ = 0, step_transfers_ = 0;
    bool step_compiled_ = false;
    int last_program_index_ = 0;
    std::vector<std::string> last_lines_;
    long debug_lines_ = 0;

    // A probed period: the state and totals it started from, and the weights of what it computed.
    struct Difference {
        Weights later;
        core::Time later_value;
        Weights earlier;
        core::Time earlier_value;
    };
    bool probing_ = false;
    std::array<core::Time, kCoords> probe_start_{};
    Totals probe_totals_;
    long probe_step_ = 0;
    std::size_t probe_programs_ = 0;
    long probe_compiled_ = 0;
    long probe_transferred_before_ = 0;
    std::vector<long> probe_transferred_;  // transfers through each step of the period
    std::array<Weights, kCoords> state_weights_{};
    std::vector<Weights> end_weights_;
    std::vector<Difference> differences_;  // step ends and gaps: both sides must advance alike
};

}  // namespace

WholeRun simulate_whole_run(const run::RunSpec& spec, const RunPlan& plan, WholeRunOptions options) {
    WholeRun w;
    w.name = spec.name;
    w.framework = std::string(parallel::framework_name(spec.runtime.framework));
    const bool pytorch = parallel::is_pytorch_xla(spec.runtime.framework);
    w.host_model = spec.runtime.host_overhead ? "constant (runtime.host_overhead)" : "graph size";
    w.overlap = pytorch ? std::string(overlap_name(effective_overlap(plan))) : "";
    w.pattern = StepPattern::of(plan);
    const StepPattern& pattern = w.pattern;
    try {
        w.single_step_s = run::simulate(spec).report.step_time_s;
        Simulator sim(spec, plan, w);
        LengthSampler train_lengths(plan.lengths, spec.training.seq_len, plan.seed);
        LengthSampler eval_lengths(plan.lengths, spec.training.seq_len, plan.seed + 1);
        const long train_batch = spec.training.global_batch;
        const long eval_batch = plan.eval.batch > 0 ? plan.eval.batch : train_batch;
        const long T = plan.train_steps, E = plan.eval.steps;
        const long eval_total = pattern.evaluations() * E;
        // The steady windows: the last steps of each phase (at most half of them), and the gaps of
        // the last phase's window.
        const long train_window = std::min<long>(plan.steady_window, std::max(1L, T / 2));
        const long eval_window = std::min<long>(plan.steady_window, std::max(1L, eval_total / 2));
        const long first_steady_train = T - train_window, first_steady_eval = eval_total - eval_window;
        long eval_index = 0;

        // A run that cannot fit in simulated time is refused before it is run: every step executes
        // on the device, one after the other, for at least its shortest program.
        {
            const long least_train_batch =
                plan.last_batch > 0 ? std::min<long>(plan.last_batch, train_batch) : train_batch;
            const long least_eval_batch =
                plan.eval.last_batch > 0 ? std::min<long>(plan.eval.last_batch, eval_batch) : eval_batch;
            const core::Time train_least =
                T > 0 ? sim.least_device_time(ProgramKind::train, train_lengths.shortest(), least_train_batch)
                      : 0;
            const core::Time eval_least =
                eval_total > 0
                    ? sim.least_device_time(ProgramKind::eval, eval_lengths.shortest(), least_eval_batch)
                    : 0;
            const Wide least =
                static_cast<Wide>(T) * train_least + static_cast<Wide>(eval_total) * eval_least;
            if (least > static_cast<Wide>(core::kMaxTime)) {
                const double days = static_cast<double>(least) / static_cast<double>(core::kSecond) / 86400.0;
                std::string steps = fmt::format("{} train steps of at least {} on the device", T,
                                                core::format_seconds(core::to_seconds(train_least)));
                if (eval_total > 0)
                    steps += fmt::format(" and {} eval steps of at least {}", eval_total,
                                         core::format_seconds(core::to_seconds(eval_least)));
                core::Diagnostics d;
                d.error(plan.location.at, "whole_run",
                        fmt::format(
                            "the run would last at least {:.0f} days ({}), longer than podsim's simulated "
                            "time reaches (int64 picoseconds, about 106 days); shorten it (train_steps, "
                            "eval.steps)",
                            days, steps));
                throw core::UserError(d);
            }
        }

        auto eval_step = [&](long e) {
            const bool last = e + 1 == E;
            const long batch = last && plan.eval.last_batch > 0 ? plan.eval.last_batch : eval_batch;
            StepSpec s;
            s.eval = true;
            s.key = {ProgramKind::eval, eval_lengths.batch_length(batch), batch, 0, 0};
            if (plan.eval.accumulate == Accumulate::device) s.key.accumulated_rows = e * eval_batch;
            s.eval_window = eval_index >= first_steady_eval;
            s.gap_window = T == 0 && s.eval_window;
            sim.run_step(s);
            ++eval_index;
        };
        auto train_step = [&](long t) {
            const bool last = t + 1 == T;
            const long batch = last && plan.last_batch > 0 ? plan.last_batch : train_batch;
            StepSpec s;
            s.key = {ProgramKind::train, train_lengths.batch_length(batch), batch, 0, 0};
            s.log_sync = plan.log_every > 0 && (t + 1) % plan.log_every == 0;
            s.train_window = t >= first_steady_train;
            s.gap_window = s.train_window;
            sim.run_step(s);
            if (plan.eval.every > 0 && (t + 1) % plan.eval.every == 0) {
                for (long e = 0; e < E; ++e) eval_step(e);
            }
        };

        // Stretches of identical steps repeat a period once the run is in a steady state: each
        // period from a boundary (a multiple of the log and evaluation intervals) is first run
        // while watching how its times depend on the state it started from (probing), and when
        // that shows an exact repetition, the periods that follow up to the next change (the end
        // of the stretch, a steady window, the last batch) are added in closed form. A probe that
        // fails waits twice as long before the next.
        const bool constant_lengths =
            options.jump_periods && train_lengths.constant() && eval_lengths.constant();
        auto step_of_train = [&](long t) {  // overall index of train step t
            if (plan.eval.every > 0 && T > 0) return t + (t / plan.eval.every) * E;
            return t;
        };
        auto step_of_eval = [&](long e) {  // overall index of eval step e (over every evaluation)
            if (plan.eval.every > 0 && T > 0) return (e / E + 1) * plan.eval.every + e;
            return T + e;
        };
        const long steady_train_from = T > 0 ? step_of_train(first_steady_train) : LONG_MAX;
        const long steady_eval_from = eval_total > 0 ? step_of_eval(first_steady_eval) : LONG_MAX;
        // The most periods that keep [first, first + periods * length) of overall steps on the side
        // of each window boundary that the probed period [probe, first) was on.
        auto periods_before_boundaries = [&](long probe, long first, long length, long periods) {
            for (long boundary : {steady_train_from, steady_eval_from}) {
                if (probe < boundary && boundary < first) return 0L;  // the probe straddles it
                if (first <= boundary) periods = std::min(periods, (boundary - first) / length);
            }
            return periods;
        };
        long failures = 0, next_probe = 0;  // in periods
        // At `index` (train steps, or eval steps of the final evaluation) on a period boundary: runs
        // one period of `unit` of them with run_unit while probing, then jumps over as many more as
        // stay regular (before regular_end) and on the same side of the steady windows. Returns
        // the units jumped over, or -1 when no probe was made here.
        auto probe_and_jump = [&](long unit, long& index, long regular_end, long steps_per_unit,
                                  auto&& run_unit) -> long {
            if (!constant_lengths || sim.step() < kRecordedSteps || index % unit != 0) return -1;
            if (index / unit < next_probe || index + 2 * unit > regular_end) return -1;
            if (unit * steps_per_unit > kMaxProbedSteps) return -1;
            const long probe_step = sim.step();
            sim.begin_probe();
            for (long i = 0; i < unit; ++i) run_unit(index + i);
            index += unit;
            const long length = sim.step() - probe_step;
            const long periods =
                periods_before_boundaries(probe_step, sim.step(), length, (regular_end - index) / unit);
            const long jumped = sim.jump(periods);
            if (jumped == 0) {
                next_probe = index / unit + (1L << std::min(failures, 30L));
                ++failures;
            } else {
                failures = 0;
                index += jumped * unit;
            }
            return jumped * unit;
        };

        // Training, with its evaluations: periods of the least common multiple of the log and
        // evaluation intervals.
        long period = 1;
        if (plan.log_every > 0) period = std::lcm(period, static_cast<long>(plan.log_every));
        if (plan.eval.every > 0) period = std::lcm(period, static_cast<long>(plan.eval.every));
        const long steps_per_train_step =
            1 + (plan.eval.every > 0 ? (E + plan.eval.every - 1) / plan.eval.every : 0);
        const long train_regular_end = T - (plan.last_batch > 0 ? 1 : 0);
        long t = 0;
        while (t < T) {
            const long jumped =
                probe_and_jump(period, t, train_regular_end, steps_per_train_step, train_step);
            if (jumped > 0 && plan.eval.every > 0) eval_index += jumped / plan.eval.every * E;
            if (jumped >= 0) continue;
            train_step(t);
            ++t;
        }
        // One evaluation after training (or alone): periods of one step, unless each step
        // accumulates its results into a new program.
        if (plan.eval.every == 0 || T == 0) {
            const long eval_regular_end =
                plan.eval.accumulate == Accumulate::device ? 0 : E - (plan.eval.last_batch > 0 ? 1 : 0);
            failures = 0;
            next_probe = 0;
            long e = 0;
            while (e < E) {
                const long jumped = probe_and_jump(1, e, eval_regular_end, 1, eval_step);
                if (jumped > 0) eval_index += jumped;
                if (jumped >= 0) continue;
                eval_step(e);
                ++e;
            }
        }
        sim.finish();

        const Totals& totals = sim.totals();
        w.train_steps = T;
        w.eval_steps = eval_total;
        w.train_time_s = core::to_seconds(totals.train_time);
        w.eval_time_s = core::to_seconds(totals.eval_time);
        w.steady_window = train_window;
        w.steady_train_step_s =
            totals.steady_train_steps > 0
                ? core::to_seconds(totals.steady_train) / static_cast<double>(totals.steady_train_steps)
                : 0.0;
        w.steady_eval_step_s =
            totals.steady_eval_steps > 0
                ? core::to_seconds(totals.steady_eval) / static_cast<double>(totals.steady_eval_steps)
                : 0.0;
        w.warmup_loss_s = std::max(0.0, w.train_time_s - w.steady_train_step_s * static_cast<double>(T));
        w.mean_gap_s = totals.gap_count > 0
                           ? core::to_seconds(totals.gaps) / static_cast<double>(totals.gap_count)
                           : 0.0;
        w.steady_gap_s = totals.steady_gap_count > 0 ? core::to_seconds(totals.steady_gaps) /
                                                           static_cast<double>(totals.steady_gap_count)
                                                     : 0.0;
        for (int m = 1; m < kMetricIds; ++m) {
            const auto i = static_cast<std::size_t>(m);
            if (totals.metric_count[i] > 0)
                w.metrics[kMetricNames[i]] = {totals.metric_count[i],
                                              core::to_seconds(totals.metric_time[i])};
        }
        const long compiles = totals.metric_count[static_cast<std::size_t>(MetricId::compile)];
        const long executions = totals.metric_count[static_cast<std::size_t>(MetricId::execute)];
        w.counters["MarkStep"] = w.total_steps();
        w.counters["UncachedCompile"] = compiles;
        w.counters["CachedCompile"] = executions - static_cast<long>(w.programs.size());
        if (plan.cache == CompileCache::persistent)
            w.counters["PersistentCacheHit"] = static_cast<long>(w.programs.size());
        w.debug_line_count = sim.debug_lines();
        w.last_debug_lines = sim.last_lines();
    } catch (const core::TimeOverflow& e) {
        core::Diagnostics d;
        d.error(
            plan.location.at, "whole_run",
            fmt::format("the run would last longer than podsim can represent ({}); shorten it (train_steps, "
                        "eval.steps) or check its times and sizes",
                        e.what()));
        throw core::UserError(d);
    }
    return w;
}

}  // namespace podsim::training_run
