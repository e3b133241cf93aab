#include "sweep/sweep_runner.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "config/overrides.hpp"
#include "core/csv.hpp"
#include "core/diagnostics.hpp"
#include "run/simulate.hpp"
#include "sweep/expression.hpp"
#include "sweep/shard.hpp"
#include "sweep/sweep_runner_ranking.hpp"
#include "sweep/sweep_runner_rows.hpp"
#include "workload/lower.hpp"

namespace podsim::sweep {

namespace fs = std::filesystem;

namespace {

Row row_from(const config::SweepPlan::Instance& instance, std::size_t index, run::SimulationCache& cache,
             const run::SimulateOptions& options) {
    Row r;
    r.index = index;
    r.values = instance.values;
    if (!instance.ok) {
        r.reason = instance.skip_reason;
        return r;
    }
    try {
        const auto& spec = instance.spec;
        run::Simulation sim = run::simulate(spec, cache, options);
        r.set_report(sim.report);
    } catch (const core::UserError& e) {
        r.reason = e.diagnostics().items().empty() ? "invalid" : e.diagnostics().items().front().message;
    }
    return r;
}

class Progress {
  public:
    Progress(std::size_t total, bool enabled) : total_(total), enabled_(enabled), tty_(::isatty(2) == 1) {}
    void update(std::size_t done, double seconds) {
        if (!enabled_ || total_ == 0) return;
        double rate = seconds > 0 ? static_cast<double>(done) / seconds : 0.0;
        double eta = rate > 0 ? static_cast<double>(total_ - done) / rate : 0.0;
        if (tty_) {
            if (seconds - last_ < 0.1 && done != total_) return;
            last_ = seconds;
            int filled = static_cast<int>(30.0 * static_cast<double>(done) / static_cast<double>(total_));
            std::fprintf(stderr, "\r[%s%s] %zu/%zu  %.0f configs/s  ETA %.1f s ",
                         std::string(filled, '#').c_str(), std::string(30 - filled, ' ').c_str(), done,
                         total_, rate, eta);
            if (done == total_) std::fprintf(stderr, "\n");
        } else {
            std::size_t step = std::max<std::size_t>(1, total_ / 10);
            if (done % step != 0 && done != total_) return;
            std::fprintf(stderr, "sweep: %zu/%zu configs, %.0f configs/s, ETA %.1f s\n", done, total_, rate,
                         eta);
        }
    }

  private:
    std::size_t total_;
    bool enabled_;
    bool tty_;
    double last_ = -1.0;
};

// Configs that differ only in the batch share their partitioned step (run::SimulationCache::partition)
// when one worker runs them back to back: they form a group, and within blocks of consecutive
// configs the batch axis goes innermost. Rows are still written in index order, so the block must
// fit in the window of rows in flight.
constexpr std::size_t kMaxBlock = 4096;

bool sets_only_batch(const config::SweepPlan::AxisShape& axis) {
    return !axis.paths.empty() && std::all_of(axis.paths.begin(), axis.paths.end(),
                                              [](const std::string& p) { return config::sets_batch(p); });
}

// The configs of `todo` in the order they run, one block at a time (memory flat in the sweep's size).
class ProcessingOrder {
  public:
    struct Next {
        std::size_t position = 0;  // in todo
        std::size_t group = 0;
    };

    ProcessingOrder(const config::SweepPlan& plan, const std::vector<std::size_t>& todo) : todo_(todo) {
        const auto axes = plan.axis_shapes();
        std::size_t batch_axis = axes.size();
        for (std::size_t a = 0; a < axes.size(); ++a) {
            if (!sets_only_batch(axes[a]) || axes[a].size < 2) continue;
            if (batch_axis < axes.size()) return;  // two batch axes: left in index order
            batch_axis = a;
        }
        if (batch_axis == axes.size()) return;
        std::size_t inner = 1;  // configs between two values of the batch axis
        for (std::size_t a = batch_axis + 1; a < axes.size(); ++a) inner *= axes[a].size;
        const std::size_t values = axes[batch_axis].size;
        if (inner > kMaxBlock / values) return;
        inner_ = inner;
        block_ = values * inner;
    }

    std::size_t block() const { return block_; }  // consecutive configs whose order changes
    bool done() const { return cursor_ == buffer_.size() && next_block_ == todo_.size(); }
    Next peek() {
        fill();
        return buffer_[cursor_];
    }
    Next pop() {
        fill();
        return buffer_[cursor_++];
    }

  private:
    // The next block's configs: groups in order of their first config, each group in index order.
    void fill() {
        if (cursor_ < buffer_.size()) return;
        buffer_.clear();
        cursor_ = 0;
        std::size_t end = next_block_ + 1;
        const std::size_t block = todo_[next_block_] / block_;
        while (end < todo_.size() && todo_[end] / block_ == block) ++end;
        for (std::size_t p = next_block_; p < end; ++p)
            buffer_.push_back({p, block_ > 1 ? block * inner_ + todo_[p] % inner_ : todo_[p]});
        std::stable_sort(buffer_.begin(), buffer_.end(), [&](const Next& a, const Next& b) {
            return todo_[a.position] % inner_ < todo_[b.position] % inner_;
        });
        next_block_ = end;
    }

    const std::vector<std::size_t>& todo_;
    std::size_t block_ = 1, inner_ = 1;
    std::vector<Next> buffer_;
    std::size_t cursor_ = 0;
    std::size_t next_block_ = 0;  // position in todo of the first config not in buffer_
};

std::string joined(const std::vector<std::string>& names) {
    if (names.empty()) return "(none)";
    std::string out;
    for (const auto& n : names) out += (out.empty() ? "" : ", ") + n;
    return out;
}

std::string shard_name(int index, int count) {
    return count <= 1 ? std::string("the whole sweep") : fmt::format("shard {}/{}", index, count);
}

// Refuses to resume into `dir` when what it holds is not this run's (another sweep, another shard,
// other swept values), before anything there is touched: resuming would mix two sweeps' rows.
void check_resumable(const fs::path& dir, const config::SweepPlan& plan, const SweepOptions& options) {
    std::vector<std::string> found;
    std::ifstream record_file(dir / "shard.txt");
    std::stringstream record_text;
    record_text << record_file.rdbuf();
    if (auto record = record_file ? parse_shard_record(record_text.str()) : std::nullopt) {
        if (!record->sweep.empty() && record->sweep != plan.fingerprint())
            found.push_back(
                fmt::format("its sweep (fingerprint {}) is not {} (fingerprint {}): the base config "
                            "or the axes differ",
                            record->sweep, plan.file(), plan.fingerprint()));
        if (record->configs != plan.size())
            found.push_back(fmt::format("it holds a sweep of {} configs; {} has {}", record->configs,
                                        plan.file(), plan.size()));
        if (record->index != options.shard_index || record->count != options.shard_count)
            found.push_back(fmt::format("it holds {}; this run is {}",
                                        shard_name(record->index, record->count),
                                        shard_name(options.shard_index, options.shard_count)));
    }
    const auto& params = plan.parameter_names();
    const auto held = parameters_of_header(first_line(dir / "results.csv"));
    if (held != params) {
        found.push_back(fmt::format("its swept parameters are {}; {} sweeps {}", joined(held), plan.file(),
                                    joined(params)));
    } else {
        std::vector<std::size_t> other_values, other_shard;
        for (const Row& r : read_results(dir / "results.csv", params.size())) {
            if (r.index >= plan.size() || r.values != plan.values_of(r.index)) {
                other_values.push_back(r.index);
            } else if (options.shard_count > 1 &&
                       static_cast<int>(r.index % static_cast<std::size_t>(options.shard_count)) !=
                           options.shard_index - 1) {
                other_shard.push_back(r.index);
            }
        }
        if (!other_values.empty()) {
            const std::size_t i = other_values.front();
            std::string held_values, these;
            for (const Row& r : read_results(dir / "results.csv", params.size())) {
                if (r.index != i) continue;
                for (std::size_t p = 0; p < params.size() && p < r.values.size(); ++p)
                    held_values +=
                        fmt::format("{}{}={}", held_values.empty() ? "" : ", ", params[p], r.values[p]);
                break;
            }
            if (i < plan.size()) {
                const auto values = plan.values_of(i);
                for (std::size_t p = 0; p < params.size() && p < values.size(); ++p)
                    these += fmt::format("{}{}={}", these.empty() ? "" : ", ", params[p], values[p]);
            }
            found.push_back(fmt::format(
                "{} of its rows hold other values than {}: its config {} is {}; here {}", other_values.size(),
                plan.file(), i, held_values, i < plan.size() ? these : "there is no such config"));
        }
        if (!other_shard.empty())
            found.push_back(fmt::format("{} of its rows (config {} first) belong to another shard than {}",
                                        other_shard.size(), other_shard.front(),
                                        shard_name(options.shard_index, options.shard_count)));
    }
    if (found.empty()) return;
    core::Diagnostics d;
    for (const auto& f : found) d.error({dir.string(), 0, 0}, "--resume", f);
    d.error({dir.string(), 0, 0}, "--resume",
            "the directory holds another sweep's results; nothing there was changed (resume a sweep with the "
            "file and --shard it was started with, or give another --out)");
    throw core::UserError(d);
}

}  // namespace

SweepSummary run_sweep(const config::SweepPlan& plan, const SweepOptions& options) {
    if (options.jobs < 0) {
        core::Diagnostics d;
        d.error({"podsim sweep", 0, 0}, "--jobs",
                fmt::format("{} is not a number of threads (at least 1; 0 takes one per hardware thread)",
                            options.jobs));
        throw core::UserError(d);
    }
    auto started = std::chrono::steady_clock::now();
    Ranking ranking = make_ranking(plan, options.top);
    const auto& params = plan.parameter_names();

    // This shard's configs.
    std::vector<std::size_t> todo;
    for (std::size_t i = 0; i < plan.size(); ++i) {
        if (options.shard_count <= 1 ||
            static_cast<int>(i % static_cast<std::size_t>(options.shard_count)) == options.shard_index - 1) {
            todo.push_back(i);
        }
    }
    ranking.summary.total = todo.size();

    std::ofstream csv, jsonl;
    if (!options.out_dir.empty()) {
        const fs::path out(options.out_dir);
        make_output_directory(out, "--out");
        fs::path csv_path = out / "results.csv";
        fs::path jsonl_path = out / "results.jsonl";
        std::set<std::size_t> done;
        if (options.resume && fs::exists(csv_path)) {
            check_resumable(out, plan, options);
            for (const Row& r : read_results(csv_path, params.size(), /*repair=*/true)) {
                done.insert(r.index);
                ranking.add(r);
                ++ranking.summary.resumed;
            }
            rewrite_jsonl(jsonl_path, done);
            std::erase_if(todo, [&](std::size_t i) { return done.count(i) > 0; });
            csv.open(csv_path, std::ios::app);
            jsonl.open(jsonl_path, std::ios::app);
        } else {
            csv.open(csv_path, std::ios::trunc);
            jsonl.open(jsonl_path, std::ios::trunc);
            csv << csv_header(params);
            csv.flush();
        }
        std::ofstream record(out / "shard.txt", std::ios::trunc);
        record << format_shard_record(
            {options.shard_index, options.shard_count, plan.size(), plan.fingerprint()});
        record.close();
        if (!csv || !jsonl || !record) results_write_error(out, "cannot write results there");
    }
    if (options.limit > 0 && todo.size() > options.limit) todo.resize(options.limit);

    // Workers simulate; this thread builds instances (the YAML is not thread-safe) and writes rows
    // in index order as they finish, so the files are the same whatever the number of jobs.
    // More threads than the hardware runs, or than there are configs, only cost memory (and too many
    // cannot be created at all).
    const int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    const int jobs =
        static_cast<int>(std::clamp<std::size_t>(std::min(options.jobs > 0 ? options.jobs : threads, threads),
                                                 1, std::max<std::size_t>(1, todo.size())));
    std::mutex mutex;
    std::condition_variable work_ready, result_ready;
    struct Task {
        std::size_t position = 0;  // in todo
        std::size_t group = 0;
        config::SweepPlan::Instance instance;
    };
    std::deque<Task> queue;
    std::map<std::size_t, Row> finished;  // position in todo -> row
    std::exception_ptr failure;           // a worker's exception (a bug): rethrown here
    bool closing = false;
    // The writer sleeps until the next row to write and the last of the batch after it have
    // finished, and the workers wake it only then: waking it for every row, with the rows' flushes,
    // was a tenth of a GPT-2 sweep's time in system calls.
    constexpr std::size_t kWriteBatch = 16;
    std::size_t awaited_first = 0, awaited_last = 0;
    auto writer_can_go = [&] {
        return failure || (finished.count(awaited_first) > 0 && finished.count(awaited_last) > 0);
    };
    // Rows are written in order, so a slow config holds the writer while the other workers go on
    // ahead: the window must cover what they finish meanwhile, or they run dry. 64 per job: 8 left
    // workers idle behind slow 175B configs, and 512 let a 100,000-config sweep's resident memory
    // creep up (+12%, allocator fragmentation) where 64 keeps it flat (bench/sweeps/rss-100k.yaml).
    ProcessingOrder order(plan, todo);
    const std::size_t window = std::max(static_cast<std::size_t>(jobs) * 64, order.block());

    std::vector<std::thread> workers;
    // However this function ends, the workers are told to stop and are joined.
    struct AtExit {
        std::function<void()> run;
        ~AtExit() { run(); }
    } join_workers{[&] {
        {
            std::lock_guard lock(mutex);
            closing = true;
            queue.clear();
        }
        work_ready.notify_all();
        for (auto& t : workers) {
            if (t.joinable()) t.join();
        }
    }};
    auto worker = [&] {
        // What configs share (lowered steps, collective plans), per worker: no lock.
        run::SimulationCache cache;
        std::vector<Task> tasks;  // a group, taken whole
        while (true) {
            tasks.clear();
            {
                std::unique_lock lock(mutex);
                work_ready.wait(lock, [&] { return closing || !queue.empty(); });
                if (queue.empty()) return;
                do {
                    tasks.push_back(std::move(queue.front()));
                    queue.pop_front();
                } while (!queue.empty() && queue.front().group == tasks.front().group);
            }
            for (Task& task : tasks) {
                Row row;
                std::exception_ptr error;
                try {
                    row = row_from(task.instance, todo[task.position], cache,
                                   run::SimulateOptions{.exact = options.exact, .fold = !options.exact});
                } catch (...) {
                    error = std::current_exception();
                }
                bool wake_writer = false;
                {
                    std::lock_guard lock(mutex);
                    if (error && !failure) failure = error;
                    finished.emplace(task.position, std::move(row));
                    wake_writer = writer_can_go();
                }
                if (wake_writer) result_ready.notify_one();
            }
        }
    };
    for (int w = 0; w < jobs; ++w) {
        try {
            workers.emplace_back(worker);
        } catch (const std::system_error&) {
            if (workers.empty()) throw;
            break;  // the system gives no more threads: the ones running do the work
        }
    }

    Progress progress(todo.size(), options.progress);
    JsonlWriter json_lines(params);
    std::size_t produced = 0, written = 0;
    auto last_flush = std::chrono::steady_clock::now();
    while (written < todo.size()) {
        // Keep the workers fed, within a bounded window ahead of the writer (flat memory).
        // A group goes to the queue whole, so that one worker takes it.
        std::vector<Task> group;
        while (!order.done() && produced < written + window) {
            group.clear();
            const std::size_t id = order.peek().group;
            // A group's configs differ only in the batch: the first valid one is parsed whole, the rest
            // are made from it (the smallest batches are often rejected for the mesh, and each of
            // those is parsed whole).
            std::size_t parsed = 0;  // in group: the first valid instance, or group.size() while none
            do {
                const std::size_t position = order.pop().position;
                group.push_back({position, id,
                                 parsed == group.size()
                                     ? plan.make(todo[position])
                                     : plan.make_beside(todo[position], todo[group[parsed].position],
                                                        group[parsed].instance)});
                if (parsed == group.size() - 1 && !group.back().instance.ok) ++parsed;
                ++produced;
            } while (!order.done() && order.peek().group == id);
            {
                std::lock_guard lock(mutex);
                for (Task& task : group) queue.push_back(std::move(task));
            }
            work_ready.notify_one();
        }
        std::vector<Row> ready;
        {
            std::unique_lock lock(mutex);
            awaited_first = written;
            awaited_last = std::min(written + kWriteBatch, todo.size()) - 1;
            result_ready.wait(lock, writer_can_go);
            if (failure) {
                queue.clear();
                lock.unlock();
                std::rethrow_exception(failure);  // JoinWorkers stops the workers
            }
            while (finished.count(written)) {
                ready.push_back(std::move(finished.at(written)));
                finished.erase(written);
                ++written;
            }
        }
        for (Row& row : ready) {
            ranking.apply_keep(row);
            ranking.add(row);
            if (jsonl.is_open()) {
                jsonl << json_lines.row(row);
                csv << csv_row(row);
            }
            if (options.on_row) options.on_row(row);
        }
        // At most every 0.1 s: a kill loses at most the rows not yet flushed (and a half line, which
        // resuming drops), and they are simulated again.
        const auto now = std::chrono::steady_clock::now();
        if (jsonl.is_open() && !ready.empty() && now - last_flush >= std::chrono::milliseconds(100)) {
            jsonl.flush();
            csv.flush();
            last_flush = now;
            if (!jsonl || !csv) results_write_error(options.out_dir, "cannot write results");
        }
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        progress.update(written, seconds);
    }
    if (jsonl.is_open()) {
        jsonl.close();
        csv.close();
        if (!jsonl || !csv) results_write_error(options.out_dir, "cannot write results");
    }

    SweepSummary summary = std::move(ranking.summary);
    summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    summary.configs_per_second =
        summary.seconds > 0 ? static_cast<double>(todo.size()) / summary.seconds : 0.0;
    return summary;
}

}  // namespace podsim::sweep
