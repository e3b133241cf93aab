#include "cli/commands.hpp"

#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "config/sweep_file.hpp"
#include "sweep/sweep_runner.hpp"

namespace podsim::cli {
namespace {

struct SweepCommand {
    std::string file, out, shard, best_config;
    int jobs = 0;
    bool resume = false, no_progress = false;
    std::size_t top = 10, limit = 0;
    std::vector<std::string> merge_dirs;
    std::string merge_file, merge_out;
};

int command_sweep(const SweepCommand& c) {
    auto plan = config::SweepPlan::load(c.file);
    sweep::SweepOptions options;
    options.jobs = c.jobs;
    options.out_dir = c.out;
    options.resume = c.resume;
    options.top = c.top;
    options.limit = c.limit;
    options.progress = !c.no_progress;
    if (!c.shard.empty()) {
        int k = 0, n = 0;
        char slash = 0;
        std::istringstream in(c.shard);
        if (!(in >> k >> slash >> n) || slash != '/' || n < 1 || k < 1 || k > n || !in.eof()) {
            option_error("--shard", fmt::format("'{}' is not K/N with 1 <= K <= N (e.g. 3/8)", c.shard));
        }
        options.shard_index = k;
        options.shard_count = n;
    }
    auto summary = sweep::run_sweep(plan, options);
    std::cout << sweep::format_summary(summary);
    if (!c.out.empty()) std::cout << fmt::format("\nresults: {}/results.csv and results.jsonl\n", c.out);
    if (!c.best_config.empty()) {
        if (summary.ranked.empty()) option_error("--best-config", "no config was kept: nothing to write");
        std::ofstream out(c.best_config);
        out << "# Best config of sweep " << c.file << " by " << summary.sort_key << " (index "
            << summary.ranked.front().index << ")\n"
            << plan.make(summary.ranked.front().index, true).run_yaml << "\n";
        std::cout << fmt::format("best config written to {}\n", c.best_config);
    }
    return 0;
}

int command_sweep_merge(const SweepCommand& c) {
    auto plan = config::SweepPlan::load(c.merge_file);
    auto summary = sweep::merge_shards(plan, c.merge_dirs, c.merge_out);
    std::cout << sweep::format_summary(summary);
    std::cout << fmt::format("\nmerged {} shard(s) into {}/results.csv and results.jsonl\n",
                             c.merge_dirs.size(), c.merge_out);
    return 0;
}

}  // namespace

Command add_sweep_command(CLI::App& app) {
    auto o = std::make_shared<SweepCommand>();
    auto* cmd = app.add_subcommand("sweep", "explore many configs from a podsim.sweep/v1 file");
    cmd->add_option("file", o->file, "sweep file");
    cmd->add_option("--jobs", o->jobs, "parallel simulations (default: cores)");
    cmd->add_option("--out", o->out, "directory for results.csv and results.jsonl");
    cmd->add_flag("--resume", o->resume, "skip configs already in --out");
    cmd->add_option("--shard", o->shard, "run the K-th of N slices of the sweep, e.g. 3/8");
    cmd->add_option("--best-config", o->best_config, "write the best config as a run config");
    cmd->add_option("--top", o->top, "rows in the ranked table (default 10)");
    cmd->add_option("--limit", o->limit, "stop after this many configs");
    cmd->add_flag("--no-progress", o->no_progress, "no progress on stderr");
    auto* merge = cmd->add_subcommand("merge", "join the results of shards");
    merge->add_option("file", o->merge_file, "the sweep file the shards ran")->required();
    merge->add_option("shards", o->merge_dirs, "shard --out directories")->required();
    merge->add_option("--out", o->merge_out, "directory for the merged results")->required();
    return {cmd, [o, merge] {
                if (*merge) return command_sweep_merge(*o);
                if (o->file.empty()) option_error("sweep", "give a sweep file (configs/sweeps/*.yaml)");
                return command_sweep(*o);
            }};
}

}  // namespace podsim::cli
