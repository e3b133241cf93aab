#include "profile/measured_profile.hpp"

#include <algorithm>
#include <cctype>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "core/csv.hpp"
#include "profile/readers_common.hpp"

namespace podsim::profile {

MeasuredProfile read_hlo_op_stats_csv(const std::string& path, const std::string& text) {
    // TensorBoard's HLO Op Stats table, exported: one row per op with category, occurrences and
    // self time (us). Columns are found by their header, case-insensitively.
    std::istringstream in(text);
    std::string header;
    std::getline(in, header);
    auto columns = core::split_csv_line(header);
    auto find = [&](std::initializer_list<const char*> names) -> int {
        for (std::size_t i = 0; i < columns.size(); ++i) {
            std::string c = columns[i];
            for (char& ch : c) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
            for (const char* n : names) {
                if (c == n) return static_cast<int>(i);
            }
        }
        return -1;
    };
    int op_col = find({"operation", "op name", "hlo op name", "op"});
    int cat_col = find({"category", "op category", "hlo category"});
    int occ_col = find({"#occurrences", "occurrences", "# occurrences"});
    int self_col =
        find({"total self-time (us)", "total self time (us)", "self time (us)", "total self-time"});
    if (op_col < 0 || self_col < 0) {
        profile_error(path, 0,
                      "not an HLO op stats CSV: needs 'Operation' and 'Total self-time (us)' columns");
    }
    MeasuredProfile p;
    p.format = "hlo-op-stats";
    p.file = path;
    std::map<std::string, MeasuredOp> ops;
    double busy = 0.0;
    std::string line;
    std::size_t offset = header.size() + 1;
    while (std::getline(in, line)) {
        std::size_t line_offset = offset;
        offset += line.size() + 1;
        if (line.empty() || line == "\r") continue;
        auto f = core::split_csv_line(line);
        if (static_cast<int>(f.size()) <= std::max({op_col, self_col, cat_col, occ_col})) {
            profile_error(path, line_offset,
                          fmt::format("row has {} columns, the header {}", f.size(), columns.size()));
        }
        MeasuredOp op;
        op.name = f[static_cast<std::size_t>(op_col)];
        try {
            op.total_s = std::stod(f[static_cast<std::size_t>(self_col)]) * 1e-6;
            op.occurrences = occ_col >= 0 ? std::stol(f[static_cast<std::size_t>(occ_col)]) : 1;
        } catch (const std::exception&) {
            profile_error(path, line_offset,
                          fmt::format("'{}' is not a number", f[static_cast<std::size_t>(self_col)]));
        }
        std::string hint = cat_col >= 0 ? f[static_cast<std::size_t>(cat_col)] : "";
        op.category = classify_op(op.name, hint);
        std::string h = hint;
        for (char& c : h) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (h.find("convolution") != std::string::npos) op.category = "matmul";
        busy += op.total_s;
        ops[op.name] = op;
    }
    if (ops.empty()) profile_error(path, 0, "no rows");
    p.steps = 1;
    p.notes.push_back("HLO op stats hold totals over the profiled steps; give --steps to compare per step");
    return finish(std::move(p), ops, busy, busy);
}

}  // namespace podsim::profile
