#include "sweep/shard.hpp"

#include <cstdlib>
#include <sstream>

#include <fmt/format.h>

#include "core/diagnostics.hpp"

namespace podsim::sweep {

namespace {

[[noreturn]] void shard_error(const std::string& option, const std::string& message) {
    core::Diagnostics d;
    d.error({"podsim sweep", 0, 0}, option, message);
    throw core::UserError(d);
}

// A whole number, or an error naming the variable.
std::optional<long long> integer_variable(const Environment& environment, const std::string& name) {
    auto text = environment(name);
    if (!text) return std::nullopt;
    std::istringstream in(*text);
    long long value = 0;
    if (!(in >> value) || !in.eof()) {
        shard_error("--shard", fmt::format("{}='{}' is not a whole number", name, *text));
    }
    return value;
}

Shard from_slurm(const Environment& env, int count_option) {
    const long long id = *integer_variable(env, "SLURM_ARRAY_TASK_ID");
    auto min = integer_variable(env, "SLURM_ARRAY_TASK_MIN");
    auto max = integer_variable(env, "SLURM_ARRAY_TASK_MAX");
    auto count = integer_variable(env, "SLURM_ARRAY_TASK_COUNT");
    const long long step = integer_variable(env, "SLURM_ARRAY_TASK_STEP").value_or(1);
    if (step < 1) shard_error("--shard", fmt::format("SLURM_ARRAY_TASK_STEP={} must be at least 1", step));
    // Slurm sets MIN with every array task; without it the ids are taken to start at 0.
    const long long first = min.value_or(0);
    if (min && max) {
        const long long span = (*max - *min) / step + 1;
        if (*max < *min || (*max - *min) % step != 0) {
            shard_error("--shard",
                        fmt::format("SLURM_ARRAY_TASK_MIN={} and MAX={} with STEP={} are not a range", *min,
                                    *max, step));
        }
        if (count && *count != span) {
            shard_error(
                "--shard",
                fmt::format("the job array is not one contiguous range (SLURM_ARRAY_TASK_COUNT={} but "
                            "MIN={}..MAX={} spans {} ids): submit it as --array=0-{}",
                            *count, *min, *max, span, *count - 1));
        }
        count = span;
    }
    if (!count) {
        shard_error(
            "--shard",
            "SLURM_ARRAY_TASK_ID is set but neither SLURM_ARRAY_TASK_COUNT nor SLURM_ARRAY_TASK_MAX is: "
            "cannot tell how many shards the array has");
    }
    if (id < first || (id - first) % step != 0 || (id - first) / step >= *count) {
        shard_error("--shard", fmt::format("SLURM_ARRAY_TASK_ID={} is not one of the {} ids of the array "
                                           "starting at {} (step {})",
                                           id, *count, first, step));
    }
    if (count_option > 0 && count_option != *count) {
        shard_error("--shard-count",
                    fmt::format("{} disagrees with the Slurm array's {} tasks", count_option, *count));
    }
    return {static_cast<int>((id - first) / step + 1), static_cast<int>(*count),
            fmt::format("Slurm array task {}", id)};
}

Shard from_kubernetes(const Environment& env, int count_option) {
    const long long index = *integer_variable(env, "JOB_COMPLETION_INDEX");
    auto from_env = integer_variable(env, "PODSIM_SHARD_COUNT");
    if (count_option > 0 && from_env && *from_env != count_option) {
        shard_error("--shard-count",
                    fmt::format("{} disagrees with PODSIM_SHARD_COUNT={}", count_option, *from_env));
    }
    const long long count = count_option > 0 ? count_option : from_env.value_or(0);
    if (count < 1) {
        shard_error(
            "--shard-count",
            "JOB_COMPLETION_INDEX is set (Kubernetes Indexed Job) but the number of shards is not: give "
            "--shard-count N or set PODSIM_SHARD_COUNT to the Job's completions");
    }
    if (index < 0 || index >= count) {
        shard_error("--shard", fmt::format("JOB_COMPLETION_INDEX={} is outside 0..{} ({} shards)", index,
                                           count - 1, count));
    }
    return {static_cast<int>(index + 1), static_cast<int>(count),
            fmt::format("Kubernetes completion index {}", index)};
}

}  // namespace

std::string format_shard_record(const ShardRecord& r) {
    std::string text = fmt::format("shard {}/{}\nconfigs {}\n", r.index, r.count, r.configs);
    if (!r.sweep.empty()) text += fmt::format("sweep {}\n", r.sweep);
    return text;
}

std::optional<ShardRecord> parse_shard_record(const std::string& text) {
    ShardRecord r;
    std::string shard_word, configs_word;
    char slash = 0;
    std::istringstream in(text);
    if (!(in >> shard_word >> r.index >> slash >> r.count >> configs_word >> r.configs) ||
        shard_word != "shard" || slash != '/' || configs_word != "configs" || r.count < 1 || r.index < 1 ||
        r.index > r.count) {
        return std::nullopt;
    }
    std::string sweep_word;
    if (in >> sweep_word >> r.sweep && sweep_word != "sweep") r.sweep.clear();
    return r;
}

Environment process_environment() {
    return [](const std::string& name) -> std::optional<std::string> {
        const char* value = std::getenv(name.c_str());
        if (value == nullptr || *value == '\0') return std::nullopt;
        return std::string(value);
    };
}

Shard resolve_shard(const std::string& option, int count_option, const Environment& environment) {
    if (count_option < 0) shard_error("--shard-count", "must be at least 1");
    if (option.empty()) {
        if (count_option > 0) shard_error("--shard-count", "goes with --shard auto");
        return {};
    }
    if (option != "auto") {
        if (count_option > 0) shard_error("--shard-count", "goes with --shard auto, not --shard K/N");
        int k = 0, n = 0;
        char slash = 0;
        std::istringstream in(option);
        if (!(in >> k >> slash >> n) || slash != '/' || n < 1 || k < 1 || k > n || !in.eof()) {
            shard_error("--shard",
                        fmt::format("'{}' is not K/N with 1 <= K <= N (e.g. 3/8), nor 'auto'", option));
        }
        return {k, n, "--shard"};
    }
    const bool slurm = environment("SLURM_ARRAY_TASK_ID").has_value();
    const bool kubernetes = environment("JOB_COMPLETION_INDEX").has_value();
    if (slurm && kubernetes) {
        shard_error("--shard",
                    "both SLURM_ARRAY_TASK_ID and JOB_COMPLETION_INDEX are set: cannot tell "
                    "which job array this is; give --shard K/N");
    }
    if (slurm) return from_slurm(environment, count_option);
    if (kubernetes) return from_kubernetes(environment, count_option);
    shard_error(
        "--shard",
        "'auto' found no job array in the environment: expected SLURM_ARRAY_TASK_ID (a Slurm "
        "--array job) or JOB_COMPLETION_INDEX (a Kubernetes Indexed Job); give --shard K/N otherwise");
}

}  // namespace podsim::sweep
