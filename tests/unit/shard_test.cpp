#include <doctest/doctest.h>

#include <map>

#include "core/diagnostics.hpp"
#include "sweep/shard.hpp"

using namespace podsim;

namespace {

sweep::Environment env(std::map<std::string, std::string> variables) {
    return [variables](const std::string& name) -> std::optional<std::string> {
        auto it = variables.find(name);
        if (it == variables.end()) return std::nullopt;
        return it->second;
    };
}

// The one message of the UserError that resolving throws.
std::string error_of(const std::string& option, int count, std::map<std::string, std::string> variables) {
    try {
        sweep::resolve_shard(option, count, env(std::move(variables)));
    } catch (const core::UserError& e) {
        REQUIRE(e.diagnostics().size() == 1);
        return e.diagnostics().items().front().to_string();
    }
    return "no error";
}

}  // namespace

TEST_CASE("--shard K/N and no --shard") {
    auto none = sweep::resolve_shard("", 0, env({}));
    CHECK(none.index == 1);
    CHECK(none.count == 1);
    auto third = sweep::resolve_shard("3/8", 0, env({{"SLURM_ARRAY_TASK_ID", "5"}}));
    CHECK(third.index == 3);  // explicit K/N wins over the environment
    CHECK(third.count == 8);
    CHECK(error_of("9/8", 0, {}) ==
          "podsim sweep: error: --shard: '9/8' is not K/N with 1 <= K <= N (e.g. 3/8), nor 'auto'");
    CHECK(error_of("3/8", 4, {}) ==
          "podsim sweep: error: --shard-count: goes with --shard auto, not --shard K/N");
    CHECK(error_of("", 4, {}) == "podsim sweep: error: --shard-count: goes with --shard auto");
}

TEST_CASE("--shard auto in a Slurm job array") {
    // sbatch --array=0-7: ids 0..7, the 6th task has id 5.
    auto s = sweep::resolve_shard("auto", 0,
                                  env({{"SLURM_ARRAY_TASK_ID", "5"},
                                       {"SLURM_ARRAY_TASK_COUNT", "8"},
                                       {"SLURM_ARRAY_TASK_MIN", "0"},
                                       {"SLURM_ARRAY_TASK_MAX", "7"}}));
    CHECK(s.index == 6);
    CHECK(s.count == 8);
    // --array=1-8 without COUNT: MIN and MAX give it; id 1 is the first shard.
    s = sweep::resolve_shard(
        "auto", 0,
        env({{"SLURM_ARRAY_TASK_ID", "1"}, {"SLURM_ARRAY_TASK_MIN", "1"}, {"SLURM_ARRAY_TASK_MAX", "8"}}));
    CHECK(s.index == 1);
    CHECK(s.count == 8);
    // --array=0-14:2 has ids 0, 2, ..., 14: eight tasks, id 14 is the last.
    s = sweep::resolve_shard("auto", 8,
                             env({{"SLURM_ARRAY_TASK_ID", "14"},
                                  {"SLURM_ARRAY_TASK_MIN", "0"},
                                  {"SLURM_ARRAY_TASK_MAX", "14"},
                                  {"SLURM_ARRAY_TASK_STEP", "2"}}));
    CHECK(s.index == 8);
    CHECK(s.count == 8);
    // COUNT alone: ids from 0.
    s = sweep::resolve_shard("auto", 0, env({{"SLURM_ARRAY_TASK_ID", "3"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}));
    CHECK(s.index == 4);
    CHECK(s.count == 4);
}

TEST_CASE("--shard auto: missing or inconsistent Slurm variables are errors") {
    CHECK(error_of("auto", 0, {{"SLURM_ARRAY_TASK_ID", "2"}}) ==
          "podsim sweep: error: --shard: SLURM_ARRAY_TASK_ID is set but neither SLURM_ARRAY_TASK_COUNT nor "
          "SLURM_ARRAY_TASK_MAX is: cannot tell how many shards the array has");
    // --array=1,3,7: three tasks that are not a range.
    CHECK(error_of("auto", 0,
                   {{"SLURM_ARRAY_TASK_ID", "3"},
                    {"SLURM_ARRAY_TASK_COUNT", "3"},
                    {"SLURM_ARRAY_TASK_MIN", "1"},
                    {"SLURM_ARRAY_TASK_MAX", "7"}}) ==
          "podsim sweep: error: --shard: the job array is not one contiguous range (SLURM_ARRAY_TASK_COUNT=3 "
          "but "
          "MIN=1..MAX=7 spans 7 ids): submit it as --array=0-2");
    CHECK(error_of("auto", 0, {{"SLURM_ARRAY_TASK_ID", "x1"}, {"SLURM_ARRAY_TASK_COUNT", "3"}}) ==
          "podsim sweep: error: --shard: SLURM_ARRAY_TASK_ID='x1' is not a whole number");
    CHECK(error_of("auto", 0, {{"SLURM_ARRAY_TASK_ID", "4"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}) ==
          "podsim sweep: error: --shard: SLURM_ARRAY_TASK_ID=4 is not one of the 4 ids of the array starting "
          "at 0 "
          "(step 1)");
    CHECK(error_of("auto", 5, {{"SLURM_ARRAY_TASK_ID", "0"}, {"SLURM_ARRAY_TASK_COUNT", "4"}}) ==
          "podsim sweep: error: --shard-count: 5 disagrees with the Slurm array's 4 tasks");
}

TEST_CASE("--shard auto in a Kubernetes Indexed Job") {
    auto s = sweep::resolve_shard("auto", 4, env({{"JOB_COMPLETION_INDEX", "0"}}));
    CHECK(s.index == 1);
    CHECK(s.count == 4);
    s = sweep::resolve_shard("auto", 0, env({{"JOB_COMPLETION_INDEX", "3"}, {"PODSIM_SHARD_COUNT", "4"}}));
    CHECK(s.index == 4);
    CHECK(s.count == 4);
    CHECK(error_of("auto", 0, {{"JOB_COMPLETION_INDEX", "3"}}) ==
          "podsim sweep: error: --shard-count: JOB_COMPLETION_INDEX is set (Kubernetes Indexed Job) but the "
          "number "
          "of shards is not: give --shard-count N or set PODSIM_SHARD_COUNT to the Job's completions");
    CHECK(error_of("auto", 4, {{"JOB_COMPLETION_INDEX", "4"}}) ==
          "podsim sweep: error: --shard: JOB_COMPLETION_INDEX=4 is outside 0..3 (4 shards)");
    CHECK(error_of("auto", 4, {{"JOB_COMPLETION_INDEX", "1"}, {"PODSIM_SHARD_COUNT", "8"}}) ==
          "podsim sweep: error: --shard-count: 4 disagrees with PODSIM_SHARD_COUNT=8");
}

TEST_CASE("--shard auto outside a job array, or in two at once") {
    CHECK(
        error_of("auto", 0, {}) ==
        "podsim sweep: error: --shard: 'auto' found no job array in the environment: expected "
        "SLURM_ARRAY_TASK_ID (a Slurm --array job) or JOB_COMPLETION_INDEX (a Kubernetes Indexed Job); give "
        "--shard K/N otherwise");
    CHECK(error_of("auto", 0, {{"SLURM_ARRAY_TASK_ID", "0"}, {"JOB_COMPLETION_INDEX", "0"}}) ==
          "podsim sweep: error: --shard: both SLURM_ARRAY_TASK_ID and JOB_COMPLETION_INDEX are set: cannot "
          "tell "
          "which job array this is; give --shard K/N");
}
