#include "sweep/sweep_runner_rows.hpp"

#include <fstream>

#include <fmt/format.h>

#include "core/csv.hpp"

namespace podsim::sweep {

namespace fs = std::filesystem;

const std::vector<std::string>& row_fields() {
    static const std::vector<std::string> fields = {"step_time_s",
                                                    "mfu",
                                                    "hfu",
                                                    "tokens_per_s",
                                                    "peak_bytes",
                                                    "memory.peak_bytes",
                                                    "capacity_bytes",
                                                    "fits",
                                                    "memory.fits",
                                                    "chips",
                                                    "exposed_communication_s",
                                                    "compute_s",
                                                    "host_peak_bytes",
                                                    "host_fits",
                                                    "compile_time_s",
                                                    "index"};
    return fields;
}

std::optional<double> row_field(const Row& r, const std::string& name) {
    if (name == "step_time_s") return r.step_time_s;
    if (name == "mfu") return r.mfu;
    if (name == "hfu") return r.hfu;
    if (name == "tokens_per_s") return r.tokens_per_s;
    if (name == "peak_bytes" || name == "memory.peak_bytes") return r.peak_bytes;
    if (name == "capacity_bytes") return r.capacity_bytes;
    if (name == "fits" || name == "memory.fits") return r.fits ? 1.0 : 0.0;
    if (name == "chips") return r.chips;
    if (name == "exposed_communication_s") return r.exposed_communication_s;
    if (name == "compute_s") return r.compute_s;
    if (name == "host_peak_bytes") return r.host_peak_bytes;
    if (name == "host_fits") return r.host_fits ? 1.0 : 0.0;
    if (name == "compile_time_s") return r.compile_time_s;
    if (name == "index") return static_cast<double>(r.index);
    return std::nullopt;
}

namespace {

const char* kMetricColumns[] = {"name",        "chips",
                                "step_time_s", "mfu",
                                "hfu",         "tokens_per_s",
                                "peak_bytes",  "capacity_bytes",
                                "fits",        "exposed_communication_s",
                                "compute_s",   "host_peak_bytes",
                                "host_fits",   "compile_time_s",
                                "kept"};

std::string num(double v) {
    return fmt::format("{:.9g}", v);
}

std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') out += '\\';
        if (static_cast<unsigned char>(c) < 0x20) {
            out += fmt::format("\\u{:04x}", c);
            continue;
        }
        out += c;
    }
    return out + "\"";
}

}  // namespace

std::string csv_header(const std::vector<std::string>& params) {
    std::string h = "index,status,reason";
    for (const auto& p : params) h += "," + core::csv_field(p);
    for (const char* m : kMetricColumns) h += std::string(",") + m;
    return h + "\n";
}

std::string csv_row(const Row& r) {
    std::string line = fmt::format("{},{},{}", r.index, r.ok ? "ok" : "skipped", core::csv_field(r.reason));
    for (const auto& v : r.values) line += "," + core::csv_field(v);
    if (!r.ok) {
        for (std::size_t i = 0; i < std::size(kMetricColumns); ++i) line += ",";
        return line + "\n";
    }
    line += "," + core::csv_field(r.name) + "," + num(r.chips) + "," + num(r.step_time_s) + "," + num(r.mfu) +
            "," + num(r.hfu) + "," + num(r.tokens_per_s) + "," + num(r.peak_bytes) + "," +
            num(r.capacity_bytes) + "," + (r.fits ? "true" : "false") + "," + num(r.exposed_communication_s) +
            "," + num(r.compute_s) + "," + num(r.host_peak_bytes) + "," + (r.host_fits ? "true" : "false") +
            "," + num(r.compile_time_s) + "," + (r.kept ? "true" : "false");
    return line + "\n";
}

std::optional<Row> parse_csv_row(const std::string& line, std::size_t params) {
    auto f = core::split_csv_line(line);
    if (f.size() != 3 + params + std::size(kMetricColumns)) return std::nullopt;
    Row r;
    try {
        r.index = std::stoul(f[0]);
        r.ok = f[1] == "ok";
        r.reason = f[2];
        r.values.assign(f.begin() + 3, f.begin() + 3 + static_cast<long>(params));
        if (r.ok) {
            std::size_t m = 3 + params;
            r.name = f[m];
            r.chips = std::stod(f[m + 1]);
            r.step_time_s = std::stod(f[m + 2]);
            r.mfu = std::stod(f[m + 3]);
            r.hfu = std::stod(f[m + 4]);
            r.tokens_per_s = std::stod(f[m + 5]);
            r.peak_bytes = std::stod(f[m + 6]);
            r.capacity_bytes = std::stod(f[m + 7]);
            r.fits = f[m + 8] == "true";
            r.exposed_communication_s = std::stod(f[m + 9]);
            r.compute_s = std::stod(f[m + 10]);
            r.host_peak_bytes = std::stod(f[m + 11]);
            r.host_fits = f[m + 12] == "true";
            r.compile_time_s = std::stod(f[m + 13]);
            r.kept = f[m + 14] == "true";
        }
    } catch (const std::exception&) {
        return std::nullopt;
    }
    return r;
}

std::string jsonl_row(const Row& r, const std::vector<std::string>& params) {
    std::string j = fmt::format("{{\"index\": {}, \"status\": \"{}\"", r.index, r.ok ? "ok" : "skipped");
    if (!r.ok) j += ", \"reason\": " + json_string(r.reason);
    j += ", \"parameters\": {";
    for (std::size_t i = 0; i < params.size(); ++i) {
        j += fmt::format("{}{}: {}", i ? ", " : "", json_string(params[i]), json_string(r.values[i]));
    }
    j += "}";
    if (r.ok) {
        j += fmt::format(
            ", \"name\": {}, \"chips\": {}, \"step_time_s\": {}, \"mfu\": {}, \"hfu\": {}, \"tokens_per_s\": "
            "{}, "
            "\"memory\": {{\"peak_bytes\": {}, \"capacity_bytes\": {}, \"fits\": {}}}, "
            "\"exposed_communication_s\": {}, \"compute_s\": {}, \"host_peak_bytes\": {}, \"host_fits\": {}, "
            "\"compile_time_s\": {}, \"kept\": {}",
            json_string(r.name), num(r.chips), num(r.step_time_s), num(r.mfu), num(r.hfu),
            num(r.tokens_per_s), num(r.peak_bytes), num(r.capacity_bytes), r.fits,
            num(r.exposed_communication_s), num(r.compute_s), num(r.host_peak_bytes), r.host_fits,
            num(r.compile_time_s), r.kept);
    }
    return j + "}\n";
}

std::vector<Row> read_results(const fs::path& csv, std::size_t params) {
    std::vector<Row> rows;
    std::ifstream in(csv, std::ios::binary);
    if (!in) return rows;
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    std::size_t good_end = 0;
    std::size_t pos = content.find('\n');  // header
    if (pos == std::string::npos) return rows;
    good_end = pos + 1;
    while (true) {
        std::size_t next = content.find('\n', good_end);
        if (next == std::string::npos) break;
        auto row = parse_csv_row(content.substr(good_end, next - good_end), params);
        if (!row) break;
        rows.push_back(*row);
        good_end = next + 1;
    }
    if (good_end < content.size()) fs::resize_file(csv, good_end);
    return rows;
}

void rewrite_jsonl(const fs::path& jsonl, const std::set<std::size_t>& done) {
    std::ifstream in(jsonl);
    std::string kept, line;
    while (std::getline(in, line)) {
        if (in.eof()) break;  // no newline: half-written
        auto at = line.find("\"index\": ");
        if (at == std::string::npos) continue;
        std::size_t index = std::strtoul(line.c_str() + at + 9, nullptr, 10);
        if (done.count(index)) kept += line + "\n";
    }
    in.close();
    std::ofstream(jsonl, std::ios::trunc) << kept;
}

}  // namespace podsim::sweep
