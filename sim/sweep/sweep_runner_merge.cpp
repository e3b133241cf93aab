#include "sweep/sweep_runner.hpp"

#include <filesystem>
#include <fstream>
#include <map>

#include "core/diagnostics.hpp"
#include "sweep/sweep_runner_ranking.hpp"
#include "sweep/sweep_runner_rows.hpp"

namespace podsim::sweep {

namespace fs = std::filesystem;

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

}  // namespace podsim::sweep
