#include "sweep/sweep_runner_rows.hpp"

#include <algorithm>
#include <array>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>

#include <fmt/compile.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "core/assert.hpp"
#include "core/csv.hpp"
#include "core/diagnostics.hpp"
#include "report/format.hpp"
#include "report/report_fields.hpp"

namespace podsim::sweep {

namespace fs = std::filesystem;

double Row::number(std::string_view field) const {
    auto column = report::sweep_column(field);
    return column ? number(*column) : kNaN;
}

std::string Row::text(std::string_view field) const {
    auto column = report::sweep_column(field);
    return column && *column < texts.size() ? texts[*column] : std::string();
}

void Row::set_report(const report::RunReport& report) {
    ok = true;
    const auto fields = report::sweep_fields();
    numbers.assign(fields.size(), kNaN);
    texts.assign(fields.size(), std::string());
    for (std::size_t i = 0; i < fields.size(); ++i) {
        if (fields[i]->type == report::FieldType::text) {
            texts[i] = fields[i]->text(report);
        } else {
            numbers[i] = fields[i]->number(report);
        }
    }
}

const Columns& columns() {
    static const Columns c = [] {
        auto at = [](std::string_view name) {
            auto column = report::sweep_column(name);
            PODSIM_ASSERT(column.has_value(), "the sweep reads a field that is not a sweep column");
            return *column;
        };
        return Columns{at("step_time_s"), at("mfu"), at("hfu"), at("peak_bytes"), at("fits")};
    }();
    return c;
}

namespace {

constexpr double kExactIntegers = 9007199254740992.0;  // 2^53

// Reals with 9 significant digits, except that from 1e9 up, where that would switch to an exponent,
// the value is rounded to a whole number (finer than those 9 digits kept): a spreadsheet or pandas
// reads 10763207680, not 1.07632077e+10. Below 2^53 that is exact.
void append_real(std::string& line, double v) {
    if (std::isfinite(v) && std::fabs(v) < kExactIntegers && (v == std::floor(v) || std::fabs(v) >= 1e9))
        fmt::format_to(std::back_inserter(line), FMT_COMPILE("{}"), std::llround(v));
    else
        fmt::format_to(std::back_inserter(line), FMT_COMPILE("{:.9g}"), v);
}

// A cell of results.csv; empty when the value is unknown.
void append_cell(std::string& line, const report::ReportField& field, double number,
                 const std::string& text) {
    line += ',';
    switch (field.type) {
        case report::FieldType::text:
            line += core::csv_field(text);
            return;
        case report::FieldType::boolean:
            if (!std::isnan(number)) line += number != 0.0 ? "true" : "false";
            return;
        case report::FieldType::integer:
            if (std::isfinite(number) && std::fabs(number) < kExactIntegers) {
                fmt::format_to(std::back_inserter(line), FMT_COMPILE("{}"), std::llround(number));
                return;
            }
            [[fallthrough]];
        default:
            if (!std::isnan(number)) append_real(line, number);
    }
}

// Reads a cell written by append_cell; false when it is not one.
bool parse_cell(const report::ReportField& field, const std::string& cell, double& number,
                std::string& text) {
    number = Row::kNaN;
    if (field.type == report::FieldType::text) {
        text = cell;
        return true;
    }
    if (cell.empty()) return true;
    if (field.type == report::FieldType::boolean) {
        if (cell != "true" && cell != "false") return false;
        number = cell == "true" ? 1.0 : 0.0;
        return true;
    }
    char* end = nullptr;
    number = std::strtod(cell.c_str(), &end);
    return end == cell.c_str() + cell.size();
}

}  // namespace

std::string csv_header(const std::vector<std::string>& params) {
    std::string h = "index,status,reason";
    for (const auto& p : params) h += "," + core::csv_field(p);
    for (const auto* f : report::sweep_fields()) h += "," + std::string(f->name());
    return h + ",kept\n";
}

std::string csv_row(const Row& r) {
    std::string line;
    line.reserve(512);
    fmt::format_to(std::back_inserter(line), FMT_COMPILE("{},{},{}"), r.index, r.ok ? "ok" : "skipped",
                   core::csv_field(r.reason));
    for (const auto& v : r.values) line += "," + core::csv_field(v);
    const auto fields = report::sweep_fields();
    if (!r.ok) return line + std::string(fields.size() + 1, ',') + "\n";
    static const std::string kNone;
    for (std::size_t i = 0; i < fields.size(); ++i)
        append_cell(line, *fields[i], r.number(i), i < r.texts.size() ? r.texts[i] : kNone);
    line += r.kept ? ",true" : ",false";
    return line + "\n";
}

CsvLayout CsvLayout::from_header(const std::string& header, std::size_t params) {
    CsvLayout layout;
    layout.params = params;
    auto names = core::split_csv_line(header);
    layout.width = names.size();
    if (names.size() < 3 + params) return layout;  // no row matches it
    layout.parameter_names.assign(names.begin() + 3, names.begin() + 3 + static_cast<long>(params));
    layout.current = header + "\n" == csv_header(layout.parameter_names);
    for (std::size_t i = 3 + params; i < names.size(); ++i) {
        if (names[i] == "kept") {
            layout.kept_at = i;
        } else if (auto column = report::sweep_column(names[i])) {
            layout.fields.emplace_back(i, *column);
        }
    }
    return layout;
}

std::optional<Row> parse_csv_row(const std::string& line, const CsvLayout& layout) {
    auto f = core::split_csv_line(line);
    if (f.size() != layout.width || f.size() < 3 + layout.params) return std::nullopt;
    Row r;
    const auto fields = report::sweep_fields();
    try {
        r.index = std::stoul(f[0]);
    } catch (const std::exception&) {
        return std::nullopt;
    }
    r.ok = f[1] == "ok";
    if (!r.ok && f[1] != "skipped") return std::nullopt;
    r.reason = f[2];
    r.values.assign(f.begin() + 3, f.begin() + 3 + static_cast<long>(layout.params));
    if (!r.ok) return r;
    // Columns an older layout lacks stay unknown.
    r.numbers.assign(fields.size(), Row::kNaN);
    r.texts.assign(fields.size(), std::string());
    for (const auto& [at, column] : layout.fields) {
        if (!parse_cell(*fields[column], f[at], r.numbers[column], r.texts[column])) return std::nullopt;
    }
    if (layout.kept_at) {
        const std::string& kept = f[*layout.kept_at];
        if (kept != "true" && kept != "false") return std::nullopt;
        r.kept = kept == "true";
    }
    return r;
}

namespace {

std::string json_string(const std::string& text) {
    return nlohmann::ordered_json(text).dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// A string as nlohmann's dump writes it: plain printable ASCII as it is, anything else through it.
void append_json_string(std::string& out, const std::string& text) {
    const bool plain = std::all_of(text.begin(), text.end(),
                                   [](char c) { return c >= 0x20 && c < 0x7f && c != '"' && c != '\\'; });
    if (!plain) {
        out += json_string(text);
        return;
    }
    out += '"';
    out += text;
    out += '"';
}

// report::number_json(type, v) as nlohmann's dump writes it, without building a string for it:
// integers in decimal, other numbers by its own shortest round-trip conversion
// (nlohmann::detail::to_chars, serializer.hpp dump_float), non-finite ones as null.
void append_json_number(std::string& out, report::FieldType type, double v) {
    const nlohmann::ordered_json value = report::number_json(type, v);
    if (value.is_boolean()) {
        out += value.get<bool>() ? "true" : "false";
    } else if (value.is_number_integer()) {
        fmt::format_to(std::back_inserter(out), FMT_COMPILE("{}"), value.get<long long>());
    } else if (value.is_number_float() && std::isfinite(value.get<double>())) {
        std::array<char, 64> buffer{};
        char* end =
            nlohmann::detail::to_chars(buffer.data(), buffer.data() + buffer.size(), value.get<double>());
        out.append(buffer.data(), end);
    } else {
        out += "null";
    }
}

}  // namespace

JsonlWriter::JsonlWriter(const std::vector<std::string>& params) : params_(params) {
    std::vector<std::string> unique;
    for (const auto& p : params)
        if (std::find(unique.begin(), unique.end(), p) == unique.end()) unique.push_back(p);
    for (std::size_t i = 0; i < unique.size(); ++i)
        parameter_keys_.push_back((i == 0 ? "" : ",") + json_string(unique[i]) + ":");
    for (const auto* f : report::sweep_fields())
        field_keys_.push_back("," + json_string(std::string(f->name())) + ":");
}

std::string JsonlWriter::row(const Row& r) {
    if (!r.ok) {
        nlohmann::ordered_json j = {{"index", r.index}, {"status", "skipped"}, {"reason", r.reason}};
        auto& parameters = j["parameters"] = nlohmann::ordered_json::object();
        for (std::size_t i = 0; i < params_.size() && i < r.values.size(); ++i)
            parameters[params_[i]] = r.values[i];
        return dump(j);
    }
    std::string out;
    out.reserve(1024);
    fmt::format_to(std::back_inserter(out), FMT_COMPILE("{{\"index\":{},\"status\":\"ok\",\"parameters\":{{"),
                   r.index);
    static const std::string kNone;
    // The parameters by position in the object (as the object's values were assigned before).
    for (std::size_t p = 0; p < parameter_keys_.size(); ++p) {
        out += parameter_keys_[p];
        append_json_string(out, p < r.values.size() ? r.values[p] : kNone);
    }
    out += '}';
    const auto fields = report::sweep_fields();
    for (std::size_t i = 0; i < fields.size(); ++i) {
        out += field_keys_[i];
        if (fields[i]->type == report::FieldType::text)
            append_json_string(out, i < r.texts.size() ? r.texts[i] : kNone);
        else
            append_json_number(out, fields[i]->type, r.number(i));
    }
    out += r.kept ? ",\"kept\":true}\n" : ",\"kept\":false}\n";
    return out;
}

std::string JsonlWriter::dump(const nlohmann::ordered_json& j) {
    // Names and swept values come from user files: invalid UTF-8 becomes U+FFFD, not an exception.
    return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
}

std::string jsonl_row(const Row& r, const std::vector<std::string>& params) {
    return JsonlWriter(params).row(r);
}

std::vector<Row> read_results(const fs::path& csv, std::size_t params, bool repair) {
    std::vector<Row> rows;
    std::ifstream in(csv, std::ios::binary);
    if (!in) return rows;
    std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    in.close();
    std::size_t good_end = 0;
    std::size_t pos = content.find('\n');  // header
    if (pos == std::string::npos) return rows;
    const CsvLayout layout = CsvLayout::from_header(content.substr(0, pos), params);
    good_end = pos + 1;
    while (true) {
        std::size_t next = content.find('\n', good_end);
        if (next == std::string::npos) break;
        auto row = parse_csv_row(content.substr(good_end, next - good_end), layout);
        if (!row) break;
        rows.push_back(*row);
        good_end = next + 1;
    }
    if (!repair) return rows;
    if (!layout.current) {
        // Written by an earlier podsim with other columns: rows to come must line up with the header.
        std::string upgraded = csv_header(layout.parameter_names);
        for (const Row& r : rows) upgraded += csv_row(r);
        std::ofstream(csv, std::ios::binary | std::ios::trunc) << upgraded;
        return rows;
    }
    if (good_end < content.size()) fs::resize_file(csv, good_end);
    return rows;
}

std::vector<std::string> parameters_of_header(const std::string& header) {
    auto names = core::split_csv_line(header);
    std::vector<std::string> params;
    const std::string first_field(report::sweep_fields().front()->name());
    for (std::size_t i = 3; i < names.size() && names[i] != first_field && names[i] != "kept"; ++i)
        params.push_back(names[i]);
    return params;
}

std::string first_line(const fs::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::string line;
    std::getline(in, line);
    return line;
}

namespace {

// The `index` of one results.jsonl line; none for a line that is not a result row.
std::optional<std::size_t> row_index(const std::string& line) {
    auto row = nlohmann::json::parse(line, nullptr, false);
    if (row.is_discarded() || !row.is_object() || !row.contains("index") ||
        !row["index"].is_number_unsigned())
        return std::nullopt;
    return row["index"].get<std::size_t>();
}

}  // namespace

std::map<std::size_t, std::string> read_jsonl_lines(const fs::path& jsonl) {
    std::map<std::size_t, std::string> lines;
    std::ifstream in(jsonl, std::ios::binary);
    std::string line;
    while (std::getline(in, line)) {
        if (in.eof()) break;  // no newline: half-written
        if (auto index = row_index(line)) lines.emplace(*index, line + "\n");
    }
    return lines;
}

void make_output_directory(const fs::path& dir, const std::string& option) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec || !fs::is_directory(dir)) {
        core::Diagnostics d;
        d.error({dir.string(), 0, 0}, option,
                fmt::format("cannot write results there: {}",
                            ec ? ec.message() : std::string("it exists and is not a directory")));
        throw core::UserError(d);
    }
}

void results_write_error(const fs::path& dir, const std::string& what) {
    core::Diagnostics d;
    d.error({dir.string(), 0, 0}, "--out",
            fmt::format("{} ({}): the results there are incomplete", what, std::strerror(errno)));
    throw core::UserError(d);
}

void rewrite_jsonl(const fs::path& jsonl, const std::set<std::size_t>& done) {
    std::ifstream in(jsonl);
    std::string kept, line;
    while (std::getline(in, line)) {
        if (in.eof()) break;  // no newline: half-written
        if (auto index = row_index(line); index && done.count(*index)) kept += line + "\n";
    }
    in.close();
    std::ofstream(jsonl, std::ios::trunc) << kept;
}

}  // namespace podsim::sweep
