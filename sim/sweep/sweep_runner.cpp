#include "sweep/sweep_runner.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "core/csv.hpp"
#include "core/diagnostics.hpp"
#include "core/quantity.hpp"
#include "run/simulate.hpp"
#include "sweep/expression.hpp"
#include "workload/lower.hpp"

namespace podsim::sweep {

namespace fs = std::filesystem;

const std::vector<std::string>& row_fields() {
    static const std::vector<std::string> fields = {"step_time_s",
                                                    "mfu",
                                                    "hfu",
                                                    "tokens_per_s",
                                                    "peak_bytes",
                                                    "memory.peak_bytes",
                                                    "capacity_bytes",
                                                    "fits",
                                                    "memory.fits",
                                                    "chips",
                                                    "exposed_communication_s",
                                                    "compute_s",
                                                    "host_peak_bytes",
                                                    "host_fits",
                                                    "compile_time_s",
                                                    "index"};
    return fields;
}

std::optional<double> row_field(const Row& r, const std::string& name) {
    if (name == "step_time_s") return r.step_time_s;
    if (name == "mfu") return r.mfu;
    if (name == "hfu") return r.hfu;
    if (name == "tokens_per_s") return r.tokens_per_s;
    if (name == "peak_bytes" || name == "memory.peak_bytes") return r.peak_bytes;
    if (name == "capacity_bytes") return r.capacity_bytes;
    if (name == "fits" || name == "memory.fits") return r.fits ? 1.0 : 0.0;
    if (name == "chips") return r.chips;
    if (name == "exposed_communication_s") return r.exposed_communication_s;
    if (name == "compute_s") return r.compute_s;
    if (name == "host_peak_bytes") return r.host_peak_bytes;
    if (name == "host_fits") return r.host_fits ? 1.0 : 0.0;
    if (name == "compile_time_s") return r.compile_time_s;
    if (name == "index") return static_cast<double>(r.index);
    return std::nullopt;
}

namespace {

// ------------------------------------------------------------------ CSV and JSON lines

const char* kMetricColumns[] = {"name",        "chips",
                                "step_time_s", "mfu",
                                "hfu",         "tokens_per_s",
                                "peak_bytes",  "capacity_bytes",
                                "fits",        "exposed_communication_s",
                                "compute_s",   "host_peak_bytes",
                                "host_fits",   "compile_time_s",
                                "kept"};

std::string csv_header(const std::vector<std::string>& params) {
    std::string h = "index,status,reason";
    for (const auto& p : params) h += "," + core::csv_field(p);
    for (const char* m : kMetricColumns) h += std::string(",") + m;
    return h + "\n";
}

std::string num(double v) {
    return fmt::format("{:.9g}", v);
}

std::string csv_row(const Row& r) {
    std::string line = fmt::format("{},{},{}", r.index, r.ok ? "ok" : "skipped", core::csv_field(r.reason));
    for (const auto& v : r.values) line += "," + core::csv_field(v);
    if (!r.ok) {
        for (std::size_t i = 0; i < std::size(kMetricColumns); ++i) line += ",";
        return line + "\n";
    }
    line += "," + core::csv_field(r.name) + "," + num(r.chips) + "," + num(r.step_time_s) + "," + num(r.mfu) +
            "," + num(r.hfu) + "," + num(r.tokens_per_s) + "," + num(r.peak_bytes) + "," +
            num(r.capacity_bytes) + "," + (r.fits ? "true" : "false") + "," + num(r.exposed_communication_s) +
            "," + num(r.compute_s) + "," + num(r.host_peak_bytes) + "," + (r.host_fits ? "true" : "false") +
            "," + num(r.compile_time_s) + "," + (r.kept ? "true" : "false");
    return line + "\n";
}

std::optional<Row> parse_csv_row(const std::string& line, std::size_t params) {
    auto f = core::split_csv_line(line);
    if (f.size() != 3 + params + std::size(kMetricColumns)) return std::nullopt;
    Row r;
    try {
        r.index = std::stoul(f[0]);
        r.ok = f[1] == "ok";
        r.reason = f[2];
        r.values.assign(f.begin() + 3, f.begin() + 3 + static_cast<long>(params));
        if (r.ok) {
            std::size_t m = 3 + params;
            r.name = f[m];
            r.chips = std::stod(f[m + 1]);
            r.step_time_s = std::stod(f[m + 2]);
            r.mfu = std::stod(f[m + 3]);
            r.hfu = std::stod(f[m + 4]);
            r.tokens_per_s = std::stod(f[m + 5]);
            r.peak_bytes = std::stod(f[m + 6]);
            r.capacity_bytes = std::stod(f[m + 7]);
            r.fits = f[m + 8] == "true";
            r.exposed_communication_s = std::stod(f[m + 9]);
            r.compute_s = std::stod(f[m + 10]);
            r.host_peak_bytes = std::stod(f[m + 11]);
            r.host_fits = f[m + 12] == "true";
            r.compile_time_s = std::stod(f[m + 13]);
            r.kept = f[m + 14] == "true";
        }
    } catch (const std::exception&) {
        return std::nullopt;
    }
    return r;
}

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) < 0x20) {
            out += fmt::format("\\u{:04x}", c);
            continue;
        }
        out += c;
    }
    return out + "\"";
}

std::string jsonl_row(const Row& r, const std::vector<std::string>& params) {
    std::string j = fmt::format("{{\"index\": {}, \"status\": \"{}\"", r.index, r.ok ? "ok" : "skipped");
    if (!r.ok) j += ", \"reason\": " + json_string(r.reason);
    j += ", \"parameters\": {";
    for (std::size_t i = 0; i < params.size(); ++i) {
        j += fmt::format("{}{}: {}", i ? ", " : "", json_string(params[i]), json_string(r.values[i]));
    }
    j += "}";
    if (r.ok) {
        j += fmt::format(
            ", \"name\": {}, \"chips\": {}, \"step_time_s\": {}, \"mfu\": {}, \"hfu\": {}, \"tokens_per_s\": "
            "{}, "
            "\"memory\": {{\"peak_bytes\": {}, \"capacity_bytes\": {}, \"fits\": {}}}, "
            "\"exposed_communication_s\": {}, \"compute_s\": {}, \"host_peak_bytes\": {}, \"host_fits\": {}, "
            "\"compile_time_s\": {}, \"kept\": {}",
            json_string(r.name), num(r.chips), num(r.step_time_s), num(r.mfu), num(r.hfu),
            num(r.tokens_per_s), num(r.peak_bytes), num(r.capacity_bytes), r.fits,
            num(r.exposed_communication_s), num(r.compute_s), num(r.host_peak_bytes), r.host_fits,
            num(r.compile_time_s), r.kept);
    }
    return j + "}\n";
}

// ------------------------------------------------------------------ ranking

struct Ranking {
    std::vector<Expression> keep;
    std::string sort_field = "mfu";
    bool descending = true;
    std::size_t top = 10;
    SweepSummary summary;

    bool better(const Row& a, const Row& b) const {
        double x = row_field(a, sort_field).value_or(0), y = row_field(b, sort_field).value_or(0);
        if (x != y) return descending ? x > y : x < y;
        return a.index < b.index;
    }

    void apply_keep(Row& r) const {
        r.kept = r.ok;
        for (const auto& e : keep) {
            if (!r.kept) break;
            r.kept = e.evaluate([&](const std::string& name) { return row_field(r, name); });
        }
    }

    // Adds a finished row; memory stays bounded: the top rows, the Pareto front, counts.
    void add(const Row& r) {
        SweepSummary& s = summary;
        if (!r.ok) {
            ++s.skipped[r.reason];
            return;
        }
        ++s.evaluated;
        if (!r.fits) ++s.not_fitting;
        if (r.kept) {
            ++s.kept;
            auto pos = std::lower_bound(s.ranked.begin(), s.ranked.end(), r,
                                        [&](const Row& a, const Row& b) { return better(a, b); });
            s.ranked.insert(pos, r);
            if (s.ranked.size() > top) s.ranked.pop_back();
        }
        if (r.fits) {
            auto dominates = [](const Row& a, const Row& b) {
                return a.step_time_s <= b.step_time_s && a.peak_bytes <= b.peak_bytes &&
                       (a.step_time_s < b.step_time_s || a.peak_bytes < b.peak_bytes);
            };
            for (const auto& p : s.pareto) {
                if (dominates(p, r) || (p.step_time_s == r.step_time_s && p.peak_bytes == r.peak_bytes))
                    return;
            }
            std::erase_if(s.pareto, [&](const Row& p) { return dominates(r, p); });
            s.pareto.push_back(r);
            std::sort(s.pareto.begin(), s.pareto.end(),
                      [](const Row& a, const Row& b) { return a.step_time_s < b.step_time_s; });
        }
    }
};

Ranking make_ranking(const config::SweepPlan& plan, std::size_t top) {
    Ranking ranking;
    ranking.top = top;
    core::Diagnostics d;
    for (const auto& k : plan.keep()) {
        std::string error;
        auto e = Expression::parse(k.text, row_fields(), error);
        if (!e) {
            d.error(k.location, "keep", fmt::format("'{}': {}", k.text, error));
        } else {
            ranking.keep.push_back(*e);
        }
    }
    std::string key = plan.sort().text;
    ranking.descending = !key.empty() && key[0] == '-';
    if (!key.empty() && (key[0] == '-' || key[0] == '+')) key = key.substr(1);
    if (!row_field(Row{}, key)) {
        d.error(
            plan.sort().location, "sort",
            fmt::format("'{}' is not a report field (one of step_time_s, mfu, hfu, tokens_per_s, peak_bytes, "
                        "chips, ...); prefix '-' for descending",
                        plan.sort().text));
    }
    ranking.sort_field = key;
    ranking.summary.sort_key = plan.sort().text;
    ranking.summary.parameter_names = plan.parameter_names();
    core::throw_if_errors(d);
    return ranking;
}

// Lowered steps of one worker, by workload::lowering_key: configs that differ only in mesh, slice or
// runtime share them. Per worker, so no lock and no state shared between simulations.
using LoweringCache = std::map<std::string, std::shared_ptr<const workload::OpGraph>>;

Row row_from(const config::SweepPlan::Instance& instance, std::size_t index, LoweringCache& cache) {
    Row r;
    r.index = index;
    r.values = instance.values;
    if (!instance.ok) {
        r.reason = instance.skip_reason;
        return r;
    }
    try {
        const auto& spec = instance.spec;
        std::string key = workload::lowering_key(spec.model, spec.training);
        auto it = cache.find(key);
        if (it == cache.end()) {
            if (cache.size() > 64) cache.clear();  // bounded: memory stays flat
            it = cache
                     .emplace(key, std::make_shared<const workload::OpGraph>(
                                       workload::lower_training_step(spec.model, spec.training)))
                     .first;
        }
        run::Simulation sim = run::simulate(spec, it->second);
        const auto& rep = sim.report;
        r.ok = true;
        r.name = rep.name;
        r.chips = static_cast<double>(rep.chips);
        r.step_time_s = rep.step_time_s;
        r.mfu = rep.mfu;
        r.hfu = rep.hfu;
        r.tokens_per_s = rep.tokens_per_s;
        r.peak_bytes = rep.memory.peak_bytes;
        r.capacity_bytes = rep.memory.capacity_bytes;
        r.fits = rep.memory.fits;
        r.exposed_communication_s = rep.exposed_communication_s;
        r.compute_s = rep.compute_s;
        r.host_peak_bytes = rep.host_peak_bytes;
        r.host_fits = rep.host_fits;
        r.compile_time_s = rep.compile_time_s;
    } catch (const core::UserError& e) {
        r.reason = e.diagnostics().items().empty() ? "invalid" : e.diagnostics().items().front().message;
    }
    return r;
}

// Reads the complete rows of an earlier run and truncates a half-written last line.
std::vector<Row> read_results(const fs::path& csv, std::size_t params) {
    std::vector<Row> rows;
    std::ifstream in(csv, std::ios::binary);
    if (!in) return rows;
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    std::size_t good_end = 0;
    std::size_t pos = content.find('\n');  // header
    if (pos == std::string::npos) return rows;
    good_end = pos + 1;
    while (true) {
        std::size_t next = content.find('\n', good_end);
        if (next == std::string::npos) break;
        auto row = parse_csv_row(content.substr(good_end, next - good_end), params);
        if (!row) break;
        rows.push_back(*row);
        good_end = next + 1;
    }
    if (good_end < content.size()) fs::resize_file(csv, good_end);
    return rows;
}

void rewrite_jsonl(const fs::path& jsonl, const std::set<std::size_t>& done) {
    std::ifstream in(jsonl);
    std::string kept, line;
    while (std::getline(in, line)) {
        if (in.eof()) break;  // no newline: half-written
        auto at = line.find("\"index\": ");
        if (at == std::string::npos) continue;
        std::size_t index = std::strtoul(line.c_str() + at + 9, nullptr, 10);
        if (done.count(index)) kept += line + "\n";
    }
    in.close();
    std::ofstream(jsonl, std::ios::trunc) << kept;
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

}  // namespace

SweepSummary run_sweep(const config::SweepPlan& plan, const SweepOptions& options) {
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
        fs::create_directories(options.out_dir);
        fs::path csv_path = fs::path(options.out_dir) / "results.csv";
        fs::path jsonl_path = fs::path(options.out_dir) / "results.jsonl";
        std::set<std::size_t> done;
        if (options.resume && fs::exists(csv_path)) {
            for (const Row& r : read_results(csv_path, params.size())) {
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
        if (!csv || !jsonl) {
            core::Diagnostics d;
            d.error({options.out_dir, 0, 0}, "--out", "cannot write results there");
            throw core::UserError(d);
        }
    }
    if (options.limit > 0 && todo.size() > options.limit) todo.resize(options.limit);

    // Workers simulate; this thread builds instances (the YAML is not thread-safe) and writes rows
    // in index order as they finish, so the files are the same whatever the number of jobs.
    const int jobs =
        options.jobs > 0 ? options.jobs : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    std::mutex mutex;
    std::condition_variable work_ready, result_ready;
    std::deque<std::pair<std::size_t, config::SweepPlan::Instance>> queue;
    std::map<std::size_t, Row> finished;  // position in todo -> row
    bool closing = false;
    const std::size_t window = static_cast<std::size_t>(jobs) * 8;

    std::vector<std::thread> workers;
    for (int w = 0; w < jobs; ++w) {
        workers.emplace_back([&] {
            LoweringCache lowered;
            while (true) {
                std::pair<std::size_t, config::SweepPlan::Instance> task;
                {
                    std::unique_lock lock(mutex);
                    work_ready.wait(lock, [&] { return closing || !queue.empty(); });
                    if (queue.empty()) return;
                    task = std::move(queue.front());
                    queue.pop_front();
                }
                Row row = row_from(task.second, todo[task.first], lowered);
                {
                    std::lock_guard lock(mutex);
                    finished.emplace(task.first, std::move(row));
                }
                result_ready.notify_one();
            }
        });
    }

    Progress progress(todo.size(), options.progress);
    std::size_t produced = 0, written = 0;
    while (written < todo.size()) {
        // Keep the workers fed, within a bounded window ahead of the writer (flat memory).
        while (produced < todo.size() && produced < written + window) {
            auto instance = plan.make(todo[produced]);
            {
                std::lock_guard lock(mutex);
                queue.emplace_back(produced, std::move(instance));
            }
            work_ready.notify_one();
            ++produced;
        }
        std::vector<Row> ready;
        {
            std::unique_lock lock(mutex);
            result_ready.wait(lock, [&] { return finished.count(written) > 0; });
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
                jsonl << jsonl_row(row, params);
                jsonl.flush();
                csv << csv_row(row);
                csv.flush();
            }
        }
        double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
        progress.update(written, seconds);
    }
    {
        std::lock_guard lock(mutex);
        closing = true;
    }
    work_ready.notify_all();
    for (auto& t : workers) t.join();

    SweepSummary summary = std::move(ranking.summary);
    summary.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    summary.configs_per_second =
        summary.seconds > 0 ? static_cast<double>(todo.size()) / summary.seconds : 0.0;
    return summary;
}

SweepSummary merge_shards(const config::SweepPlan& plan, const std::vector<std::string>& shard_dirs,
                          const std::string& out_dir) {
    Ranking ranking = make_ranking(plan, 10);
    const auto& params = plan.parameter_names();
    std::map<std::size_t, Row> rows;
    for (const auto& dir : shard_dirs) {
        fs::path csv = fs::path(dir) / "results.csv";
        if (!fs::exists(csv)) {
            core::Diagnostics d;
            d.error({csv.string(), 0, 0}, "", "no results.csv in this shard directory");
            throw core::UserError(d);
        }
        for (Row& r : read_results(csv, params.size())) rows.emplace(r.index, std::move(r));
    }
    fs::create_directories(out_dir);
    std::ofstream csv(fs::path(out_dir) / "results.csv", std::ios::trunc);
    std::ofstream jsonl(fs::path(out_dir) / "results.jsonl", std::ios::trunc);
    csv << csv_header(params);
    for (auto& [index, r] : rows) {
        csv << csv_row(r);
        jsonl << jsonl_row(r, params);
        ranking.add(r);
    }
    ranking.summary.total = plan.size();
    return std::move(ranking.summary);
}

std::string format_summary(const SweepSummary& s) {
    std::string out;
    auto params_text = [&](const Row& r) {
        std::string t;
        for (std::size_t i = 0; i < r.values.size() && i < s.parameter_names.size(); ++i) {
            t += (i ? "  " : "") + s.parameter_names[i] + "=" + r.values[i];
        }
        return t;
    };
    out += fmt::format("sweep: {} configs, {} simulated, {} kept, {} do not fit, {} skipped", s.total,
                       s.evaluated, s.kept, s.not_fitting, [&] {
                           std::size_t n = 0;
                           for (const auto& [reason, count] : s.skipped) n += count;
                           return n;
                       }());
    if (s.resumed > 0) out += fmt::format(" ({} from an earlier run)", s.resumed);
    out += fmt::format("; {:.2f} s, {:.0f} configs/s\n\n", s.seconds, s.configs_per_second);
    out += fmt::format("best by {} (kept configs)\n", s.sort_key);
    out += fmt::format("  {:>4} {:>6} {:>10} {:>7} {:>7} {:>11} {:>5}  {}\n", "rank", "index", "step", "MFU",
                       "HFU", "peak HBM", "fits", "parameters");
    for (std::size_t i = 0; i < s.ranked.size(); ++i) {
        const Row& r = s.ranked[i];
        out += fmt::format("  {:>4} {:>6} {:>10} {:>6.1f}% {:>6.1f}% {:>11} {:>5}  {}\n", i + 1, r.index,
                           core::format_seconds(r.step_time_s), 100 * r.mfu, 100 * r.hfu,
                           core::format_bytes(r.peak_bytes), r.fits ? "yes" : "no", params_text(r));
    }
    out += "\nPareto front: step time vs peak HBM (configs that fit)\n";
    for (const Row& r : s.pareto) {
        out += fmt::format("  {:>6} {:>10} {:>11}  MFU {:>5.1f}%  {}\n", r.index,
                           core::format_seconds(r.step_time_s), core::format_bytes(r.peak_bytes), 100 * r.mfu,
                           params_text(r));
    }
    if (s.not_fitting > 0 || !s.skipped.empty()) out += "\nnot run or not fitting\n";
    if (s.not_fitting > 0)
        out += fmt::format("  {:>6}  simulated, but peak HBM exceeds capacity\n", s.not_fitting);
    for (const auto& [reason, count] : s.skipped) out += fmt::format("  {:>6}  skipped: {}\n", count, reason);
    return out;
}

}  // namespace podsim::sweep
