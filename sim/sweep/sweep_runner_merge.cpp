#include "sweep/sweep_runner.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "core/diagnostics.hpp"
#include "sweep/shard.hpp"
#include "sweep/sweep_runner_ranking.hpp"
#include "sweep/sweep_runner_rows.hpp"

namespace podsim::sweep {

namespace fs = std::filesystem;

namespace {

// "3, 7, 11 and 2 more": a list that stays one line.
std::string some_of(const std::vector<std::size_t>& values, std::size_t shown = 10) {
    std::string out;
    for (std::size_t i = 0; i < values.size() && i < shown; ++i)
        out += fmt::format("{}{}", i ? ", " : "", values[i]);
    if (values.size() > shown) out += fmt::format(" and {} more", values.size() - shown);
    return out;
}

}  // namespace

SweepSummary merge_shards(const config::SweepPlan& plan, const std::vector<std::string>& shard_dirs,
                          const std::string& out_dir, bool allow_partial,
                          std::vector<std::string>* problems) {
    Ranking ranking = make_ranking(plan, 10);
    const auto& params = plan.parameter_names();
    core::Diagnostics unreadable;
    std::vector<std::string> found;  // what makes the set partial or doubled
    std::map<std::size_t, Row> rows;
    std::map<std::size_t, std::string> row_dir;
    // Each row's line of its shard's results.jsonl, written as it is: the CSV rounds numbers to 9
    // significant digits, the JSON lines hold them whole, as an unsharded run writes them.
    std::map<std::size_t, std::string> json_line;
    std::map<int, std::string> shard_dir;  // shard index -> directory
    int shard_count = 0;
    for (const auto& dir : shard_dirs) {
        fs::path csv = fs::path(dir) / "results.csv";
        if (!fs::exists(csv)) {
            unreadable.error({csv.string(), 0, 0}, "", "no results.csv in this shard directory");
            continue;
        }
        // Which shard this is, as the run that wrote it recorded (directories of older runs have none).
        std::ifstream record_file(fs::path(dir) / "shard.txt");
        std::stringstream record_text;
        record_text << record_file.rdbuf();
        if (auto record = record_file ? parse_shard_record(record_text.str()) : std::nullopt) {
            if (!record->sweep.empty() && record->sweep != plan.fingerprint()) {
                unreadable.error(
                    {dir, 0, 0}, "",
                    fmt::format("this shard ran another sweep than {} (fingerprint {}, {} has {}): "
                                "its base config or axes differ",
                                plan.file(), record->sweep, plan.file(), plan.fingerprint()));
                continue;
            }
            if (record->configs != plan.size()) {
                unreadable.error({dir, 0, 0}, "",
                                 fmt::format("this shard ran a sweep of {} configs, {} has {}",
                                             record->configs, plan.file(), plan.size()));
                continue;
            }
            if (shard_count != 0 && record->count != shard_count) {
                found.push_back(fmt::format("{} is shard {}/{} but others are of {} shards", dir,
                                            record->index, record->count, shard_count));
            }
            shard_count = std::max(shard_count, record->count);
            auto [it, inserted] = shard_dir.emplace(record->index, dir);
            if (!inserted) {
                found.push_back(fmt::format("shard {}/{} given twice: {} and {}", record->index,
                                            record->count, it->second, dir));
                continue;
            }
        }
        if (parameters_of_header(first_line(csv)) != params) {
            unreadable.error({csv.string(), 0, 0}, "",
                             fmt::format("its swept parameters are not those of {}", plan.file()));
            continue;
        }
        auto lines = read_jsonl_lines(fs::path(dir) / "results.jsonl");
        for (Row& r : read_results(csv, params.size())) {
            auto [it, inserted] = row_dir.emplace(r.index, dir);
            if (!inserted) {
                found.push_back(fmt::format("config {} is in both {} and {}", r.index, it->second, dir));
                continue;
            }
            if (auto line = lines.find(r.index); line != lines.end())
                json_line[r.index] = std::move(line->second);
            rows.emplace(r.index, std::move(r));
        }
    }
    core::throw_if_errors(unreadable);
    std::vector<std::size_t> missing_shards;
    for (int k = 1; k <= shard_count; ++k) {
        if (!shard_dir.count(k)) missing_shards.push_back(static_cast<std::size_t>(k));
    }
    if (!missing_shards.empty()) {
        std::string list;
        for (std::size_t k : missing_shards)
            list += fmt::format("{}{}/{}", list.empty() ? "" : ", ", k, shard_count);
        found.push_back(fmt::format("missing shard{} {}", missing_shards.size() == 1 ? "" : "s", list));
    }
    std::vector<std::size_t> missing_rows;
    for (std::size_t i = 0; i < plan.size(); ++i) {
        if (!rows.count(i)) missing_rows.push_back(i);
    }
    if (!missing_rows.empty()) {
        found.push_back(
            fmt::format("{} of {} configs have no row (index {}): a shard is missing or did not finish "
                        "(--resume completes it)",
                        missing_rows.size(), plan.size(), some_of(missing_rows)));
    }
    if (!found.empty() && !allow_partial) {
        core::Diagnostics d;
        for (const auto& problem : found) d.error({"podsim sweep merge", 0, 0}, "", problem);
        d.error({"podsim sweep merge", 0, 0}, "", "nothing merged; --partial merges what is there");
        throw core::UserError(d);
    }
    if (problems) *problems = found;
    make_output_directory(out_dir, "--out");
    std::ofstream csv(fs::path(out_dir) / "results.csv", std::ios::trunc);
    std::ofstream jsonl(fs::path(out_dir) / "results.jsonl", std::ios::trunc);
    csv << csv_header(params);
    JsonlWriter json_lines(params);
    for (auto& [index, r] : rows) {
        csv << csv_row(r);
        auto line = json_line.find(index);
        jsonl << (line != json_line.end() ? line->second : json_lines.row(r));
        ranking.add(r);
    }
    csv.close();
    jsonl.close();
    if (!csv || !jsonl) results_write_error(out_dir, "cannot write the merged results");
    ranking.summary.total = plan.size();
    return std::move(ranking.summary);
}

}  // namespace podsim::sweep
