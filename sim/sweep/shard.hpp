#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>

namespace podsim::sweep {

// Which slice of a sweep this process runs: configs whose index is `index - 1` modulo `count`.
struct Shard {
    int index = 1;  // 1-based
    int count = 1;
    std::string origin;  // where index and count came from, for the summary and messages
};

// Reads an environment variable; empty when unset. The process environment in the CLI, a map in tests.
using Environment = std::function<std::optional<std::string>(const std::string& name)>;
Environment process_environment();

// `--shard K/N`, or `--shard auto`: index and count from the job array this process belongs to.
//   Slurm (sbatch --array=A-B): SLURM_ARRAY_TASK_ID, with SLURM_ARRAY_TASK_COUNT or
//   SLURM_ARRAY_TASK_MIN/MAX (and _STEP); the array must be one contiguous range (a step is allowed).
//   Kubernetes Indexed Job: JOB_COMPLETION_INDEX (0-based), with the count from --shard-count or
//   PODSIM_SHARD_COUNT (a Job does not expose its completions to its pods).
// `count_option` is --shard-count (0 = not given). Mistakes throw core::UserError labelled
// "podsim sweep".
Shard resolve_shard(const std::string& option, int count_option, const Environment& environment);

// What a sweep's --out directory holds (its shard.txt), so that `sweep merge` can tell a complete
// set of shards from a partial or doubled one.
struct ShardRecord {
    int index = 1;
    int count = 1;
    std::size_t configs = 0;  // in the whole sweep
    std::string sweep;        // config::SweepPlan::fingerprint(); empty in records of older runs
};
std::string format_shard_record(const ShardRecord& record);
std::optional<ShardRecord> parse_shard_record(const std::string& text);

}  // namespace podsim::sweep
