#include "cli/commands.hpp"

#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include <fmt/format.h>

#include "config/sweep_file.hpp"
#include "sweep/shard.hpp"
#include "sweep/sweep_runner.hpp"

namespace podsim::cli {
namespace {

struct SweepCommand {
    std::string file, out, shard, best_config;
    int jobs = 0, shard_count = 0;
    bool jobs_given = false;
    bool resume = false, no_progress = false, partial = false, exact = false;
    std::size_t top = 10, limit = 0;
    std::vector<std::string> merge_dirs;
    std::string merge_file, merge_out;
};

int command_sweep(const SweepCommand& c) {
    if (c.jobs_given && c.jobs < 1)
        option_error("podsim sweep", "--jobs",
                     fmt::format("{} is not a number of threads: give at least 1 (without --jobs: one per "
                                 "hardware thread)",
                                 c.jobs));
    if (c.resume && c.out.empty())
        option_error("podsim sweep", "--resume", "needs --out: the directory of the run to resume");
    auto plan = config::SweepPlan::load(c.file);
    sweep::SweepOptions options;
    options.jobs = c.jobs;
    options.out_dir = c.out;
    options.resume = c.resume;
    options.top = c.top;
    options.limit = c.limit;
    options.progress = !c.no_progress;
    options.exact = c.exact;
    sweep::Shard shard = sweep::resolve_shard(c.shard, c.shard_count, sweep::process_environment());
    options.shard_index = shard.index;
    options.shard_count = shard.count;
    if (shard.count > 1) {
        std::cerr << fmt::format("podsim sweep: shard {}/{} ({})\n", shard.index, shard.count, shard.origin);
    }
    auto summary = sweep::run_sweep(plan, options);
    std::cout << sweep::format_summary(summary);
    if (!c.out.empty()) std::cout << fmt::format("\nresults: {}/results.csv and results.jsonl\n", c.out);
    if (!c.best_config.empty()) {
        if (summary.ranked.empty())
            option_error("podsim sweep", "--best-config", "no config was kept: nothing to write");
        write_file(c.best_config, "# Best config of sweep " + c.file + " by " + summary.sort_key +
                                      " (index " + std::to_string(summary.ranked.front().index) + ")\n" +
                                      plan.make(summary.ranked.front().index, true).run_yaml + "\n");
        std::cout << fmt::format("best config written to {}\n", c.best_config);
    }
    return 0;
}

int command_sweep_merge(const SweepCommand& c) {
    auto plan = config::SweepPlan::load(c.merge_file);
    std::vector<std::string> problems;
    auto summary = sweep::merge_shards(plan, c.merge_dirs, c.merge_out, c.partial, &problems);
    for (const auto& p : problems) std::cerr << "podsim sweep merge: warning: " << p << "\n";
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
    auto* jobs = cmd->add_option("--jobs", o->jobs,
                                 "parallel simulations (default, and at most: the hardware threads; at most "
                                 "the configs to run)");
    cmd->add_option("--out", o->out, "directory for results.csv and results.jsonl");
    cmd->add_flag("--resume", o->resume, "skip configs already in --out");
    cmd->add_option("--shard", o->shard,
                    "run the K-th of N slices of the sweep, e.g. 3/8; 'auto' takes K and N from a Slurm job "
                    "array or a Kubernetes Indexed Job");
    cmd->add_option("--shard-count", o->shard_count,
                    "with --shard auto in a Kubernetes Indexed Job: the Job's completions (or set "
                    "PODSIM_SHARD_COUNT)");
    cmd->add_option("--best-config", o->best_config, "write the best config as a run config");
    cmd->add_option("--top", o->top, "rows in the ranked table (default 10)");
    cmd->add_option("--limit", o->limit, "stop after this many configs");
    cmd->add_flag("--no-progress", o->no_progress, "no progress on stderr");
    cmd->add_flag("--exact", o->exact,
                  "simulate every config with the full flow replay (same results, slower)");
    auto* merge = cmd->add_subcommand("merge", "join the results of shards");
    merge->add_option("file", o->merge_file, "the sweep file the shards ran")->required();
    merge->add_option("shards", o->merge_dirs, "shard --out directories")->required();
    merge->add_option("--out", o->merge_out, "directory for the merged results")->required();
    merge->add_flag("--partial", o->partial,
                    "merge even when shards or configs are missing or doubled (listed as warnings)");
    return {cmd, [o, merge, jobs] {
                o->jobs_given = jobs->count() > 0;
                if (*merge) return command_sweep_merge(*o);
                if (o->file.empty())
                    option_error("podsim sweep", "sweep", "give a sweep file (configs/sweeps/*.yaml)");
                return command_sweep(*o);
            }};
}

}  // namespace podsim::cli
