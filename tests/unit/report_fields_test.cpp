#include <doctest/doctest.h>

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "config/sweep_file.hpp"
#include "core/csv.hpp"
#include "report/format.hpp"
#include "report/report_fields.hpp"
#include "support.hpp"
#include "sweep/sweep_runner.hpp"
#include "sweep/sweep_runner_ranking.hpp"
#include "sweep/sweep_runner_rows.hpp"

// The report registry (report/report_fields.hpp) is the one list of report fields: these tests hold
// the JSON report, the sweep files, keep/sort and explain to it, field by field, so a field added
// to the registry is covered without touching them.

using namespace podsim;
namespace fs = std::filesystem;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Dotted paths of the JSON report's leaves (arrays count as leaves).
void leaf_paths(const nlohmann::ordered_json& j, const std::string& prefix, std::vector<std::string>& out) {
    for (auto it = j.begin(); it != j.end(); ++it) {
        std::string path = prefix.empty() ? it.key() : prefix + "." + it.key();
        if (it->is_object()) {
            leaf_paths(*it, path, out);
        } else {
            out.push_back(path);
        }
    }
}

// A results.csv as rows of column -> cell.
std::vector<std::map<std::string, std::string>> csv_table(const std::string& text) {
    std::istringstream lines(text);
    std::string line;
    std::getline(lines, line);
    auto header = core::split_csv_line(line);
    std::vector<std::map<std::string, std::string>> rows;
    while (std::getline(lines, line)) {
        auto cells = core::split_csv_line(line);
        REQUIRE(cells.size() == header.size());
        std::map<std::string, std::string> row;
        for (std::size_t i = 0; i < cells.size(); ++i) row[header[i]] = cells[i];
        rows.push_back(row);
    }
    return rows;
}

sweep::SweepOptions quiet(const fs::path& out) {
    sweep::SweepOptions o;
    o.out_dir = out.string();
    o.jobs = 1;
    o.progress = false;
    return o;
}

}  // namespace

TEST_CASE("the JSON report writes exactly the registry's fields, in its order, with its types") {
    auto sim = test::simulate_config("configs/default.yaml");
    auto j = nlohmann::ordered_json::parse(report::format_json(sim.report));
    std::vector<std::string> written;
    leaf_paths(j, "", written);
    REQUIRE(written.front() == "schema");
    written.erase(written.begin());
    std::vector<std::string> declared;
    for (const auto& f : report::report_fields()) declared.emplace_back(f.path);
    CHECK(written == declared);

    for (const auto& f : report::report_fields()) {
        CAPTURE(f.path);
        CHECK(!f.meaning.empty());
        auto pointer = nlohmann::ordered_json::json_pointer("/" + [&] {
            std::string p(f.path);
            for (auto& c : p)
                if (c == '.') c = '/';
            return p;
        }());
        const auto& value = j.at(pointer);
        switch (f.type) {
            case report::FieldType::integer:
                CHECK(value.is_number_integer());
                CHECK(value.get<double>() == f.number(sim.report));
                break;
            case report::FieldType::real:
                CHECK(value.is_number());
                CHECK(value.get<double>() == f.number(sim.report));
                break;
            case report::FieldType::boolean:
                CHECK(value.is_boolean());
                CHECK(value.get<bool>() == (f.number(sim.report) != 0.0));
                break;
            case report::FieldType::text:
                CHECK(value.is_string());
                CHECK(value.get<std::string>() == f.text(sim.report));
                break;
            case report::FieldType::list:
                CHECK(value.is_array());
                break;
        }
        // Accessors match the type: numbers for numbers, text for text, none for lists.
        CHECK((f.number != nullptr) == f.numeric());
        CHECK((f.text != nullptr) == (f.type == report::FieldType::text));
    }
}

TEST_CASE("names are unique, and every sweep column is found by its column and by its path") {
    std::set<std::string> names;
    for (const auto& f : report::report_fields()) {
        CHECK(names.insert(std::string(f.path)).second);
        if (!f.column.empty() && f.column != f.path) CHECK(names.insert(std::string(f.column)).second);
        CHECK(report::find_field(f.path) == &f);
    }
    auto columns = report::sweep_fields();
    REQUIRE(columns.size() > 10);
    for (std::size_t i = 0; i < columns.size(); ++i) {
        CAPTURE(columns[i]->path);
        CHECK(!columns[i]->column.empty());
        CHECK(report::sweep_column(columns[i]->column) == i);
        CHECK(report::sweep_column(columns[i]->path) == i);
    }
    CHECK_FALSE(report::sweep_column("memory.peak_op").has_value());  // in the report, not a column
}

TEST_CASE("explain report and explain sweep list every field with its type, unit and meaning") {
    const std::string report_text = report::explain_report();
    for (const auto& f : report::report_fields()) {
        CAPTURE(f.path);
        std::string head = fmt::format("  {:<34} {}{}", f.path, report::type_name(f.type),
                                       f.unit.empty() ? std::string() : fmt::format(" [{}]", f.unit));
        CHECK(report_text.find(head) != std::string::npos);
        CHECK(report_text.find(std::string(f.meaning)) != std::string::npos);
    }
    const std::string sweep_text = report::explain_sweep();
    for (const auto* f : report::sweep_fields()) {
        CAPTURE(f->path);
        std::string head = fmt::format("  {:<26} {}{}", f->name(), report::type_name(f->type),
                                       f->unit.empty() ? std::string() : fmt::format(" [{}]", f->unit));
        CHECK(sweep_text.find(head) != std::string::npos);
        CHECK(sweep_text.find(std::string(f->meaning)) != std::string::npos);
    }
    for (const char* fixed : {"index", "status", "reason", "kept"})
        CHECK(sweep_text.find(fmt::format("\n  {:<26} ", fixed)) != std::string::npos);
}

TEST_CASE("sweep rows: CSV and JSONL columns are the registry's, integers as integers, round trip") {
    auto sim = test::simulate_config("configs/default.yaml");
    sweep::Row row;
    row.index = 7;
    row.values = {"2x2x1"};
    row.set_report(sim.report);
    row.kept = true;
    const std::vector<std::string> params = {"slice"};

    std::string header = sweep::csv_header(params);
    std::string expected_header = "index,status,reason,slice";
    for (const auto* f : report::sweep_fields()) expected_header += "," + std::string(f->name());
    CHECK(header == expected_header + ",kept\n");

    std::string line = sweep::csv_row(row);
    auto table = csv_table(header + line);
    REQUIRE(table.size() == 1);
    // chips and params are integers (4 and 2196691968: configs/default.yaml); bytes above 1e9 are
    // whole numbers (no 1.07e+10); booleans are true/false.
    CHECK(table[0]["chips"] == "4");
    CHECK(table[0]["params"] == fmt::format("{}", sim.report.params));
    CHECK(table[0]["capacity_bytes"] == fmt::format("{}", std::llround(sim.report.memory.capacity_bytes)));
    CHECK(table[0]["fits"] == "true");
    CHECK(line.find("e+") == std::string::npos);

    auto layout = sweep::CsvLayout::from_header(header.substr(0, header.size() - 1), params.size());
    CHECK(layout.current);
    auto back = sweep::parse_csv_row(line.substr(0, line.size() - 1), layout);
    REQUIRE(back);
    CHECK(sweep::csv_row(*back) == line);  // what resuming reads is what it wrote

    auto json = nlohmann::json::parse(sweep::jsonl_row(row, params));
    CHECK(json["index"] == 7);
    CHECK(json["parameters"]["slice"] == "2x2x1");
    for (const auto* f : report::sweep_fields()) {
        CAPTURE(f->path);
        REQUIRE(json.contains(std::string(f->name())));
        const auto& v = json[std::string(f->name())];
        if (f->type == report::FieldType::integer) CHECK(v.is_number_integer());
        if (f->type == report::FieldType::boolean) CHECK(v.is_boolean());
        if (f->type == report::FieldType::real) CHECK(v.is_number());
        if (f->type == report::FieldType::text) CHECK(v.is_string());
    }
    CHECK(json["kept"] == true);
}

TEST_CASE("sweep rows stay valid JSON and CSV with unknown and non-finite values and invalid UTF-8") {
    report::RunReport r;
    r.name = "bad\xff\xfe name \"quoted\"\n";
    r.step_time_s = std::numeric_limits<double>::infinity();
    r.mfu = kNaN;
    r.host_capacity_bytes = 0;  // unknown host memory: host_fits is null
    sweep::Row row;
    row.values = {"\xc3("};
    row.set_report(r);
    auto json = nlohmann::json::parse(sweep::jsonl_row(row, {"slice"}));
    CHECK(json["step_time_s"].is_null());
    CHECK(json["mfu"].is_null());
    CHECK(json["host_fits"].is_null());
    CHECK(json["name"].get<std::string>().find("\xef\xbf\xbd") != std::string::npos);  // U+FFFD
    auto report_json = nlohmann::json::parse(report::format_json(r));
    CHECK(report_json["step_time_s"].is_null());
    CHECK(report_json["host_memory"]["fits"].is_null());

    std::string header = sweep::csv_header({"slice"});
    auto table = csv_table(header + sweep::csv_row(row));
    CHECK(table[0]["mfu"].empty());
    CHECK(table[0]["host_fits"].empty());
    CHECK(table[0]["step_time_s"] == "inf");
}

TEST_CASE("keep and sort take the numeric sweep columns and their report paths") {
    std::string error;
    for (const auto* f : report::sweep_fields()) {
        CAPTURE(f->path);
        if (!f->numeric()) {
            CHECK_FALSE(sweep::parse_row_expression(std::string(f->name()) + " > 0", error));
            continue;
        }
        CHECK(sweep::parse_row_expression(std::string(f->name()) + " >= 0", error));
        CHECK(sweep::parse_row_expression(std::string(f->path) + " >= 0", error));
    }
    CHECK_FALSE(sweep::parse_row_expression("exposed_comunication_s < 1", error));
    CHECK(error == "unknown field 'exposed_comunication_s' (did you mean 'exposed_communication_s'?)");
    CHECK_FALSE(sweep::parse_row_expression("memory.peak_byte < 1", error));
    CHECK(error == "unknown field 'memory.peak_byte' (did you mean 'memory.peak_bytes'?)");

    // host_fits of a topology without host memory is unknown: false, and every comparison fails.
    report::RunReport r;
    r.memory.fits = true;
    sweep::Row row;
    row.set_report(r);
    auto holds = [&](const std::string& text) {
        auto e = sweep::parse_row_expression(text, error);
        REQUIRE(e);
        return e->evaluate(row.numbers);
    };
    CHECK(holds("fits"));
    CHECK(holds("memory.fits and host_s == 0"));
    CHECK_FALSE(holds("host_fits"));
    CHECK_FALSE(holds("host_fits != 1"));
    CHECK(holds("not host_fits"));
}

TEST_CASE("a results.csv of an earlier layout resumes and merges") {
    // The layout before the registry: 14 report columns in another order, host_fits true when
    // unknown. Rewritten from a current run's rows, then resumed.
    auto plan = config::SweepPlan::load(test::source_path("tests/data/sweeps/small.yaml"));
    fs::path whole = test::fresh_dir("fields-whole"), old = test::fresh_dir("old");
    sweep::run_sweep(plan, quiet(whole));
    auto table = csv_table(test::read_text(whole / "results.csv"));
    const std::vector<std::string> params = plan.parameter_names();
    const std::vector<std::string> old_columns = {"name",        "chips",
                                                  "step_time_s", "mfu",
                                                  "hfu",         "tokens_per_s",
                                                  "peak_bytes",  "capacity_bytes",
                                                  "fits",        "exposed_communication_s",
                                                  "compute_s",   "host_peak_bytes",
                                                  "host_fits",   "compile_time_s",
                                                  "kept"};
    std::string text = "index,status,reason";
    for (const auto& p : params) text += "," + core::csv_field(p);
    for (const auto& c : old_columns) text += "," + c;
    text += "\n";
    for (std::size_t i = 0; i < 5; ++i) {
        auto& row = table[i];
        text += row["index"] + "," + row["status"] + "," + core::csv_field(row["reason"]);
        for (const auto& p : params) text += "," + core::csv_field(row[p]);
        for (const auto& c : old_columns) text += "," + core::csv_field(row[c]);
        text += "\n";
    }
    fs::create_directories(old);
    std::ofstream(old / "results.csv") << text;

    // Merging reads it as it is.
    auto rows = sweep::read_results(old / "results.csv", params.size());
    REQUIRE(rows.size() == 5);
    CHECK(rows[2].number("mfu") == std::stod(table[2]["mfu"]));
    CHECK(std::isnan(rows[2].number("idle_s")));          // not in the old layout
    CHECK(test::read_text(old / "results.csv") == text);  // reading for a merge does not rewrite

    auto options = quiet(old);
    options.resume = true;
    auto summary = sweep::run_sweep(plan, options);
    CHECK(summary.resumed == 5);
    auto resumed = csv_table(test::read_text(old / "results.csv"));
    REQUIRE(resumed.size() == table.size());
    CHECK(
        test::read_text(old / "results.csv").substr(0, test::read_text(old / "results.csv").find('\n')) ==
        test::read_text(whole / "results.csv").substr(0, test::read_text(whole / "results.csv").find('\n')));
    for (std::size_t i = 0; i < table.size(); ++i) {
        CAPTURE(i);
        for (const auto& entry : table[i]) {  // not a structured binding: CAPTURE is a lambda
            const std::string& column = entry.first;
            const std::string& cell = entry.second;
            CAPTURE(column);
            const bool lacking =
                i < 5 && std::find(old_columns.begin(), old_columns.end(), column) == old_columns.end() &&
                column != "index" && column != "status" && column != "reason" &&
                std::find(params.begin(), params.end(), column) == params.end();
            CHECK(resumed[i][column] == (lacking ? std::string() : cell));
        }
    }
}

TEST_CASE("a sweep's JSON line is the one nlohmann's dump writes, byte for byte") {
    // The writer builds the line itself (a sweep writes thousands per second); the reference is the
    // row as an ordered_json object dumped as before: parameters by position, one per distinct name.
    auto reference = [](const sweep::Row& row, const std::vector<std::string>& params) {
        nlohmann::ordered_json j = nlohmann::ordered_json::object();
        j["index"] = row.index;
        j["status"] = "ok";
        auto& parameters = j["parameters"] = nlohmann::ordered_json::object();
        for (const auto& p : params) parameters.emplace(p, "");
        std::size_t position = 0;
        for (auto& value : parameters) {
            value = position < row.values.size() ? row.values[position] : std::string();
            ++position;
        }
        const auto fields = report::sweep_fields();
        for (std::size_t i = 0; i < fields.size(); ++i) {
            j[std::string(fields[i]->name())] =
                fields[i]->type == report::FieldType::text
                    ? nlohmann::ordered_json(i < row.texts.size() ? row.texts[i] : "")
                    : report::number_json(fields[i]->type, row.number(i));
        }
        j["kept"] = row.kept;
        return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    };
    report::RunReport r;
    r.chips = 6144;
    r.params = 100'000'000'000'000'000;  // an integer field past 2^53: written as a double
    r.step_time_s = 1e-7;
    r.mfu = -0.0;
    r.hfu = kNaN;
    r.tokens_per_s = 1.7976931348623157e308;
    r.memory.peak_bytes = 123456789012345678.0;  // an integer past 2^53: written as a double
    r.memory.capacity_bytes = 34359738368.0;
    r.compute_s = 0.1 + 0.2;
    r.host_capacity_bytes = 0;
    // Each string special in one way only: invalid UTF-8, valid UTF-8, a control character, a quote
    // and a backslash.
    const std::vector<std::string> texts = {"bad\xff",    "caf\xc3\xa9", "tab\there",
                                            "\"quoted\"", "back\\slash", "{data: 2, fsdp: auto}"};
    for (const std::string& text : texts) {
        r.name = text;
        for (const std::vector<std::string>& params :
             {std::vector<std::string>{"slice", "mesh"}, std::vector<std::string>{"slice", "mesh", "slice"},
              std::vector<std::string>{}}) {
            sweep::Row row;
            row.index = 4321;
            row.values = {"4x4x8", text, "\xe2\x82\xac"};
            row.set_report(r);
            row.kept = params.size() == 2;
            CAPTURE(text);
            CAPTURE(params.size());
            CHECK(sweep::jsonl_row(row, params) == reference(row, params));
        }
    }
}
