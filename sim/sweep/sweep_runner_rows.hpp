#pragma once

// A sweep's rows on disk: results.csv (what resuming and merging read back) and results.jsonl.

#include <cstddef>
#include <filesystem>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "sweep/sweep_runner.hpp"

namespace podsim::sweep {

// Columns: index, status, reason, one per swept parameter, the sweep fields of the report registry
// (report::sweep_fields()), kept.
std::string csv_header(const std::vector<std::string>& params);
std::string csv_row(const Row& r);

// Which column of a results.csv holds which field, read from its header: files of an earlier
// podsim, with fewer or other report columns, still read (what they lack stays unknown).
struct CsvLayout {
    std::size_t params = 0;
    std::vector<std::string> parameter_names;
    std::size_t width = 0;                                    // cells per row
    std::vector<std::pair<std::size_t, std::size_t>> fields;  // cell -> position in sweep_fields()
    std::optional<std::size_t> kept_at;
    bool current = false;  // the header this podsim writes
    static CsvLayout from_header(const std::string& header, std::size_t params);
};
std::optional<Row> parse_csv_row(const std::string& line, const CsvLayout& layout);

// results.jsonl: one JSON object per row: index, status, reason (skipped rows), parameters, the
// sweep fields by column name, kept. The writer of a sweep keeps one object with every key in place
// and only assigns each row's values (building the object row by row was most of a row's cost).
class JsonlWriter {
  public:
    explicit JsonlWriter(const std::vector<std::string>& params);
    std::string row(const Row& r);

  private:
    static std::string dump(const nlohmann::ordered_json& j);
    std::vector<std::string> params_;
    // A simulated row is written directly, as nlohmann's dump would write it: the keys, escaped
    // once, and the number of parameters the object holds (a name given twice is there once).
    std::vector<std::string> parameter_keys_;  // `"name":`, then `,"name":`
    std::vector<std::string> field_keys_;      // `,"column":`
};
std::string jsonl_row(const Row& r, const std::vector<std::string>& params);

// Reads the complete rows of an earlier run. With `repair` (resuming into it) it also truncates a
// half-written last line, and rewrites a file of an earlier layout in the current one so that the
// rows appended next line up with its header; without, the file is left as it is.
std::vector<Row> read_results(const std::filesystem::path& csv, std::size_t params, bool repair = false);
// The swept parameters a results.csv header names (the columns between `reason` and the report's).
std::vector<std::string> parameters_of_header(const std::string& header);
// The first line of a file, without its newline; empty when it cannot be read.
std::string first_line(const std::filesystem::path& file);
// The complete lines of a results.jsonl by the index they hold (with their newline).
std::map<std::size_t, std::string> read_jsonl_lines(const std::filesystem::path& jsonl);
// Creates the directory results go to; a core::UserError naming `option` when that cannot be done
// (a file there, no permission).
void make_output_directory(const std::filesystem::path& dir, const std::string& option);
// Throws the core::UserError of a failed write of results into `dir` (errno says why).
[[noreturn]] void results_write_error(const std::filesystem::path& dir, const std::string& what);

// Keeps the JSON lines whose index is in `done` (rows also in results.csv).
void rewrite_jsonl(const std::filesystem::path& jsonl, const std::set<std::size_t>& done);

}  // namespace podsim::sweep
