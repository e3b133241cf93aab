#include "training_run/whole_run.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <set>

#include <fmt/format.h>

#include "core/assert.hpp"
#include "core/engine.hpp"
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

namespace {

constexpr double kMiB = 1024.0 * 1024.0;
constexpr int kCompileWarmupSteps = 10;  // torch_xla metrics_analysis.cpp: MetricFrequency warm-up
// ... and its threshold, more than 0.5 per step (written below as 2 x count > steps).

struct Task {
    Track track = Track::host;
    std::string name;
    core::Time duration = 0;
    std::vector<int> deps;
    int step = 0;
    int program = -1;
    std::string metric;  // PyTorch/XLA metric it is a sample of, if any
};

// Tasks on tracks, each track running its tasks one at a time in the order they were added; a
// task starts when its track is free and its dependencies have ended (as scheduler::schedule does
// for device ops).
class TaskRun final : public core::EventHandler {
  public:
    explicit TaskRun(const std::vector<Task>& tasks) : tasks_(tasks) {
        const std::size_t n = tasks.size();
        pending_.assign(n, 0);
        successors_.resize(n);
        for (std::size_t i = 0; i < n; ++i) {
            for (int d : tasks[i].deps) {
                PODSIM_ASSERT(d >= 0 && static_cast<std::size_t>(d) < i, "dependency not added before");
                successors_[static_cast<std::size_t>(d)].push_back(static_cast<int>(i));
                ++pending_[i];
            }
            queues_[static_cast<std::size_t>(tasks[i].track)].push_back(static_cast<int>(i));
        }
        start_.assign(n, 0);
        end_.assign(n, 0);
    }

    void run() {
        for (int t = 0; t < kTracks; ++t) try_start(t);
        engine_.run();
        for (int t = 0; t < kTracks; ++t) {
            PODSIM_ASSERT(heads_[static_cast<std::size_t>(t)] == queues_[static_cast<std::size_t>(t)].size(),
                          "whole run: a task never became ready");
        }
    }

    void on_event(core::Time now, std::uint64_t tag) override {
        const auto i = static_cast<std::size_t>(tag);
        end_[i] = now;
        const auto track = static_cast<std::size_t>(tasks_[i].track);
        busy_[track] = false;
        ++heads_[track];
        for (int s : successors_[i]) {
            if (--pending_[static_cast<std::size_t>(s)] == 0)
                try_start(static_cast<int>(tasks_[static_cast<std::size_t>(s)].track));
        }
        try_start(static_cast<int>(track));
    }

    core::Time start(int i) const { return start_[static_cast<std::size_t>(i)]; }
    core::Time end(int i) const { return end_[static_cast<std::size_t>(i)]; }
    std::uint64_t events() const { return engine_.events_processed(); }

  private:
    void try_start(int track) {
        const auto t = static_cast<std::size_t>(track);
        if (busy_[t] || heads_[t] >= queues_[t].size()) return;
        const auto i = static_cast<std::size_t>(queues_[t][heads_[t]]);
        if (pending_[i] != 0) return;
        busy_[t] = true;
        start_[i] = engine_.now();
        engine_.schedule_after(tasks_[i].duration, *this, i);
    }

    const std::vector<Task>& tasks_;
    core::Engine engine_;
    std::vector<int> pending_;
    std::vector<std::vector<int>> successors_;
    std::vector<int> queues_[kTracks];
    std::size_t heads_[kTracks] = {};
    bool busy_[kTracks] = {};
    std::vector<core::Time> start_, end_;
};

// Sequence length of each batch. std::mt19937_64 is specified exactly by the standard, and the
// draws below use only its raw output, so every platform gets the same lengths.
class LengthSampler {
  public:
    LengthSampler(const SequenceLengths& lengths, int configured, std::uint64_t seed)
        : l_(lengths), configured_(configured), rng_(seed) {}

    int batch_length(long samples) {
        int length = 0;
        switch (l_.distribution) {
            case LengthDistribution::fixed:
                return configured_;
            case LengthDistribution::buckets:
                return l_.buckets[pick_bucket()];
            case LengthDistribution::uniform:
            case LengthDistribution::normal:
                for (long i = 0; i < samples; ++i) length = std::max(length, sample());
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

class Builder {
  public:
    Builder(const run::RunSpec& spec, const RunPlan& plan, ProgramLibrary& library)
        : spec_(spec), plan_(plan), library_(library), cal_(spec.calibration) {
        pytorch_ = parallel::is_pytorch_xla(spec.runtime.framework);
        overlap_ = effective_overlap(plan);
    }

    // One step: its input, then each part of its graph (one unless ops without a lowering split
    // it), then the syncs that follow it. Returns the task that ends the step.
    int add_step(int step, bool eval, ProgramKey key, bool log_sync) {
        const double tokens =
            static_cast<double>(key.batch) *
            spec_.model.tokens_per_sample(key.seq_len > 0 ? key.seq_len : spec_.training.seq_len);
        const double input_bytes = plan_.input_bytes.value_or(
            spec_.model.is_vit() ? static_cast<double>(key.batch) * spec_.model.channels *
                                       spec_.model.image_size * spec_.model.image_size * 4.0
                                 : tokens * 4.0);  // int32 token ids
        const int load = add(Track::loader, "input pipeline", plan_.input_host_time, {}, step);
        int back = add(Track::to_device, "input copy", transfer_s(input_bytes), {load}, step, -1,
                       "TransferToServerTime");
        const int parts = plan_.unlowered_ops + 1;
        int exec = -1;
        for (int part = 0; part < parts; ++part) {
            key.part = part;
            const Program& program = library_.get(key);
            auto [it, inserted] = program_index_.try_emplace(key, static_cast<int>(programs_.size()));
            if (inserted) programs_.push_back(program);
            const int index = it->second;
            const bool miss = inserted;
            if (miss) compiled_step_.insert(step);
            std::vector<int> exec_deps = host_work(step, program, index, miss);
            exec_deps.push_back(back);
            if (last_exec_ >= 0) exec_deps.push_back(last_exec_);
            exec = add(Track::device, program.name, 0.0, exec_deps, step, index, "ExecuteTime");
            tasks_[static_cast<std::size_t>(exec)].duration = program.device_time;
            last_program_ = program.name;
            last_exec_ = exec;
            if (part + 1 < parts) {
                // An op without a lowering: its input to the host, the op there, its output back.
                const int out =
                    add(Track::from_device, "unlowered op input", transfer_s(plan_.unlowered_bytes), {exec},
                        step, -1, "TransferFromServerTime");
                const int cpu = add(Track::host, "op without lowering (CPU)", cal_.cpu_op_time, {out}, step);
                back = add(Track::to_device, "unlowered op output", transfer_s(plan_.unlowered_bytes), {cpu},
                           step, -1, "TransferToServerTime");
            }
        }
        int end = exec;
        if (log_sync) {
            const int t = add(Track::from_device, "loss.item()", transfer_s(4.0), {exec}, step, -1,
                              "TransferFromServerTime");
            end = add(Track::host, "wait (sync)", 0.0, {t}, step);
        }
        if (eval && plan_.eval.accumulate == Accumulate::host) {
            int t = exec;
            const double bytes = static_cast<double>(key.batch) * plan_.eval.accumulated_bytes_per_sample;
            for (int i = 0; i < plan_.eval.accumulated_tensors; ++i) {
                t = add(Track::from_device, "result to host", transfer_s(bytes), {exec, t}, step, -1,
                        "TransferFromServerTime");
            }
            end = add(Track::host, "wait (sync)", 0.0, {t}, step);
        }
        return end;
    }

    std::vector<Task>& tasks() { return tasks_; }
    std::vector<Program>& programs() { return programs_; }
    bool compiled_in(int step) const { return compiled_step_.count(step) > 0; }
    const std::string& last_program() const { return last_program_; }

  private:
    int add(Track track, std::string name, double seconds, std::vector<int> deps, int step, int program = -1,
            std::string metric = "") {
        Task t;
        t.track = track;
        t.name = std::move(name);
        t.duration = core::from_seconds(seconds);
        t.deps = std::move(deps);
        t.step = step;
        t.program = program;
        t.metric = std::move(metric);
        tasks_.push_back(std::move(t));
        return static_cast<int>(tasks_.size()) - 1;
    }

    double transfer_s(double bytes) const {
        return cal_.transfer_latency + cal_.transfer_per_mib * bytes / kMiB;
    }

    // Host work before an execution; returns what the execution waits for.
    std::vector<int> host_work(int step, const Program& p, int index, bool miss) {
        const double ops = p.ops;
        const int prev = last_exec_;
        auto after_prev = [&]() { return prev >= 0 ? std::vector<int>{prev} : std::vector<int>{}; };
        auto compile = [&]() {
            if (plan_.cache == CompileCache::persistent) {
                add(Track::host, "load from compile cache", cal_.cache_load_per_op * ops, {}, step, index);
            } else {
                add(Track::host, "compile", p.compile_s, {}, step, index, "CompileTime");
            }
        };
        if (spec_.runtime.host_overhead) {
            // The host as a constant per step (today's single-step model): PyTorch/XLA traces before
            // the device starts and waits for it; JAX dispatches ahead.
            if (miss) compile();
            return {add(Track::host, "host overhead (runtime.host_overhead)", *spec_.runtime.host_overhead,
                        pytorch_ ? after_prev() : std::vector<int>{}, step)};
        }
        if (!pytorch_) {
            if (miss) {
                add(Track::host, "trace (jit)", cal_.trace_per_op_jax * ops, {}, step, index);
                compile();
            }
            return {add(Track::host, "dispatch",
                        cal_.dispatch_per_executable_jax + cal_.dispatch_per_argument_jax * p.arguments, {},
                        step, index)};
        }
        // PyTorch/XLA: tracing runs while the previous execution does (lazy tensors, asynchronous
        // execution); then SyncTensorsGraph hashes, compiles on a miss, and RunPostOrder and
        // FetchTensorData either wait for the previous execution or overlap it.
        add(Track::host, "trace (lazy IR)", cal_.trace_per_op_pytorch_xla * ops, {}, step, index);
        add(Track::host, "hash + cache lookup", cal_.hash_per_op_pytorch_xla * ops, {}, step, index);
        if (miss) compile();
        const bool post_order_waits = overlap_ == Overlap::none;
        const bool fetch_waits = overlap_ != Overlap::run_post_order_and_fetch;
        add(Track::host, "RunPostOrder", cal_.post_order_per_op_pytorch_xla * ops,
            post_order_waits ? after_prev() : std::vector<int>{}, step, index);
        const int fetch = add(Track::host, "FetchTensorData", cal_.fetch_per_tensor_pytorch_xla * p.tensors,
                              fetch_waits ? after_prev() : std::vector<int>{}, step, index);
        std::vector<int> launch_deps{fetch};
        if (prev >= 0) launch_deps.push_back(prev);
        return {
            add(Track::runtime, "launch", cal_.launch_per_execution_pytorch_xla, launch_deps, step, index)};
    }

    const run::RunSpec& spec_;
    const RunPlan& plan_;
    ProgramLibrary& library_;
    const cost::Calibration& cal_;
    bool pytorch_ = false;
    Overlap overlap_ = Overlap::run_post_order_and_fetch;
    std::vector<Task> tasks_;
    std::vector<Program> programs_;
    std::map<ProgramKey, int> program_index_;
    std::set<int> compiled_step_;
    int last_exec_ = -1;
    std::string last_program_;
};

double mean_of_last(const std::vector<double>& values, int window) {
    if (values.empty()) return 0.0;
    // At most the second half of the steps, so that a short run's warm-up is not its steady state.
    const std::size_t n = std::min({values.size(), static_cast<std::size_t>(std::max(1, window)),
                                    std::max<std::size_t>(1, values.size() / 2)});
    double total = 0.0;
    for (std::size_t i = values.size() - n; i < values.size(); ++i) total += values[i];
    return total / static_cast<double>(n);
}

}  // namespace

WholeRun simulate_whole_run(const run::RunSpec& spec, const RunPlan& plan) {
    ProgramLibrary library(spec, plan);
    Builder builder(spec, plan, library);
    LengthSampler train_lengths(plan.lengths, spec.training.seq_len, plan.seed);
    LengthSampler eval_lengths(plan.lengths, spec.training.seq_len, plan.seed + 1);
    const long train_batch = spec.training.global_batch;
    const long eval_batch = plan.eval.batch > 0 ? plan.eval.batch : train_batch;

    struct Planned {
        bool eval;
        int end_task;
        std::string program;
    };
    std::vector<Planned> planned;
    int step = 0;
    auto evaluation = [&]() {
        for (int e = 0; e < plan.eval.steps; ++e) {
            const bool last = e + 1 == plan.eval.steps;
            const long batch = last && plan.eval.last_batch > 0 ? plan.eval.last_batch : eval_batch;
            ProgramKey key{ProgramKind::eval, eval_lengths.batch_length(batch), batch, 0, 0};
            if (plan.eval.accumulate == Accumulate::device) key.accumulated_rows = e * eval_batch;
            const int end = builder.add_step(step++, true, key, false);
            planned.push_back({true, end, builder.last_program()});
        }
    };
    for (int t = 0; t < plan.train_steps; ++t) {
        const bool last = t + 1 == plan.train_steps;
        const long batch = last && plan.last_batch > 0 ? plan.last_batch : train_batch;
        ProgramKey key{ProgramKind::train, train_lengths.batch_length(batch), batch, 0, 0};
        const bool log_sync = plan.log_every > 0 && (t + 1) % plan.log_every == 0;
        const int end = builder.add_step(step++, false, key, log_sync);
        planned.push_back({false, end, builder.last_program()});
        if (plan.eval.every > 0 && (t + 1) % plan.eval.every == 0) evaluation();
    }
    if (plan.eval.every == 0 || plan.train_steps == 0) evaluation();

    const auto& tasks = builder.tasks();
    TaskRun run(tasks);
    run.run();

    WholeRun w;
    w.name = spec.name;
    w.framework = std::string(parallel::framework_name(spec.runtime.framework));
    const bool pytorch = parallel::is_pytorch_xla(spec.runtime.framework);
    w.host_model = spec.runtime.host_overhead ? "constant (runtime.host_overhead)" : "graph size";
    w.overlap = pytorch ? std::string(overlap_name(effective_overlap(plan))) : "";
    {
        run::RunSpec single = spec;
        w.single_step_s = run::simulate(single).report.step_time_s;
    }
    w.programs = builder.programs();
    w.events = run.events();

    // Steps, in the order they ran.
    core::Time previous_end = 0;
    std::vector<double> train_durations, eval_durations;
    for (std::size_t s = 0; s < planned.size(); ++s) {
        StepRecord r;
        r.index = static_cast<int>(s);
        r.eval = planned[s].eval;
        r.end = run.end(planned[s].end_task);
        r.duration_s = core::to_seconds(r.end - previous_end);
        r.compiled = builder.compiled_in(static_cast<int>(s));
        r.program = planned[s].program;
        previous_end = std::max(previous_end, r.end);
        (r.eval ? eval_durations : train_durations).push_back(r.duration_s);
        (r.eval ? w.eval_time_s : w.train_time_s) += r.duration_s;
        w.steps.push_back(std::move(r));
    }
    w.train_steps = static_cast<int>(train_durations.size());
    w.eval_steps = static_cast<int>(eval_durations.size());
    w.steady_train_step_s = mean_of_last(train_durations, plan.steady_window);
    w.steady_window = std::min(plan.steady_window, std::max(1, w.train_steps / 2));
    w.steady_eval_step_s = mean_of_last(eval_durations, plan.steady_window);
    w.warmup_loss_s = std::max(0.0, w.train_time_s - w.steady_train_step_s * w.train_steps);

    // Activities, metrics, gaps between executions.
    std::vector<long> compiles_by_step(planned.size(), 0), from_device_by_step(planned.size(), 0);
    core::Time last_exec_end = -1;
    std::vector<std::pair<int, double>> gaps;  // (step, gap)
    for (std::size_t i = 0; i < tasks.size(); ++i) {
        const Task& t = tasks[i];
        const core::Time start = run.start(static_cast<int>(i)), end = run.end(static_cast<int>(i));
        w.run_time_s = std::max(w.run_time_s, core::to_seconds(end));
        if (!t.metric.empty()) {
            auto& m = w.metrics[t.metric];
            ++m.count;
            m.total_s += core::to_seconds(end - start);
            if (t.metric == "CompileTime") ++compiles_by_step[static_cast<std::size_t>(t.step)];
            if (t.metric == "TransferFromServerTime") ++from_device_by_step[static_cast<std::size_t>(t.step)];
        }
        if (t.track == Track::device) {
            if (last_exec_end >= 0) gaps.emplace_back(t.step, core::to_seconds(start - last_exec_end));
            last_exec_end = end;
        }
        if (end > start) w.activities.push_back({t.track, t.name, t.step, t.program, start, end});
    }
    // Gaps: over the run, and over the steady window of the last phase (train if any).
    const bool steady_on_train = w.train_steps > 0;
    int window_from = 0, seen = 0;
    const int phase_steps = steady_on_train ? w.train_steps : w.eval_steps;
    const int window = std::min(plan.steady_window, std::max(1, phase_steps / 2));
    for (std::size_t s = planned.size(); s-- > 0;) {
        if (planned[s].eval == !steady_on_train && seen < window) {
            window_from = static_cast<int>(s);
            ++seen;
        }
    }
    double all = 0.0, steady = 0.0;
    int steady_count = 0;
    for (const auto& [s, gap] : gaps) {
        all += gap;
        if (s >= window_from && planned[static_cast<std::size_t>(s)].eval == !steady_on_train) {
            steady += gap;
            ++steady_count;
        }
    }
    w.mean_gap_s = gaps.empty() ? 0.0 : all / static_cast<double>(gaps.size());
    w.steady_gap_s = steady_count ? steady / steady_count : 0.0;

    const long compiles = w.metrics.count("CompileTime") ? w.metrics["CompileTime"].count : 0;
    const long executions = w.metrics["ExecuteTime"].count;
    w.counters["MarkStep"] = static_cast<long>(planned.size());
    w.counters["UncachedCompile"] = compiles;
    w.counters["CachedCompile"] = executions - static_cast<long>(w.programs.size());
    if (plan.cache == CompileCache::persistent)
        w.counters["PersistentCacheHit"] = static_cast<long>(w.programs.size());

    // PT_XLA_DEBUG's analysis after every mark_step (torch_xla runtime/metrics_analysis.cpp): a metric
    // whose process-wide count exceeds half the steps; CompileTime only after 10 warm-up steps.
    long compiled = 0, transferred = 0;
    for (std::size_t s = 0; s < planned.size(); ++s) {
        compiled += compiles_by_step[s];
        transferred += from_device_by_step[s];
        w.steps[s].compiles_so_far = compiled;
        w.steps[s].from_device_so_far = transferred;
        if (pytorch) {
            const long steps = static_cast<long>(s) + 1;
            if (steps > kCompileWarmupSteps && 2 * compiled > steps)
                w.debug_lines.push_back(fmt::format(
                    "pt-xla-profiler: CompileTime too frequent: {} counts during {} steps", compiled, steps));
            if (2 * transferred > steps)
                w.debug_lines.push_back(fmt::format(
                    "pt-xla-profiler: TransferFromServerTime too frequent: {} counts during {} steps",
                    transferred, steps));
        }
    }
    return w;
}

}  // namespace podsim::training_run
