#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "report/run_report.hpp"

namespace podsim::report {

enum class FieldType { integer, real, boolean, text, list };

// One field of the report, declared once (report_fields.cpp): the JSON report writes it at `path`;
// when it has a `column` name, sweeps write it as that column of results.csv / results.jsonl / the
// Python row and keep and sort expressions name it by either; `podsim explain report` / `explain
// sweep` print its unit and meaning.
struct ReportField {
    std::string_view path;    // in the JSON report, dotted: "memory.peak_bytes"
    std::string_view column;  // in sweep rows and expressions ("peak_bytes"); "": not a sweep column
    FieldType type = FieldType::real;
    // SI for amounts (s, B, FLOP, FLOP/s), what a count counts (chips, tokens), or fraction; empty
    // for text and booleans.
    std::string_view unit;
    std::string_view meaning;
    // Numbers and booleans (1 or 0); NaN when the report does not know the value (written as
    // null). Integers are exact up to 2^53.
    double (*number)(const RunReport&) = nullptr;
    std::string (*text)(const RunReport&) = nullptr;  // text fields

    bool numeric() const {
        return type == FieldType::integer || type == FieldType::real || type == FieldType::boolean;
    }
    bool in_sweep() const { return !column.empty(); }
    // The name sweep rows and expressions use: the column, or the path when there is none.
    std::string_view name() const { return column.empty() ? path : column; }
};

// Every field of the report (schema podsim.report/v1), in the order of the JSON report. Lists
// (op_stats, matmul_shapes, resources) are entries of type list without accessors.
std::span<const ReportField> report_fields();

// The fields of a sweep row (those with a column), in column order.
std::span<const ReportField* const> sweep_fields();

// The field named `name` (its column or its JSON path), or null.
const ReportField* find_field(std::string_view name);

// Position in sweep_fields() of the field named `name` (column or path), or nullopt.
std::optional<std::size_t> sweep_column(std::string_view name);
// Names keep and sort expressions take: each numeric sweep field's column, then its path.
const std::vector<std::string>& expression_names();

std::string_view type_name(FieldType type);

// `podsim explain report` and `podsim explain sweep`.
std::string explain_report();
std::string explain_sweep();

}  // namespace podsim::report
