#pragma once

// A sweep's rows on disk: results.csv (what resuming and merging read back) and results.jsonl.

#include <cstddef>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sweep/sweep_runner.hpp"

namespace podsim::sweep {

std::string csv_header(const std::vector<std::string>& params);
std::string csv_row(const Row& r);
std::optional<Row> parse_csv_row(const std::string& line, std::size_t params);
std::string jsonl_row(const Row& r, const std::vector<std::string>& params);

// Reads the complete rows of an earlier run and truncates a half-written last line.
std::vector<Row> read_results(const std::filesystem::path& csv, std::size_t params);
// Keeps the JSON lines whose index is in `done` (rows also in results.csv).
void rewrite_jsonl(const std::filesystem::path& jsonl, const std::set<std::size_t>& done);

}  // namespace podsim::sweep
