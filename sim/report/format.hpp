#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "memory/memory_profile.hpp"
#include "parallel/device_program.hpp"
#include "report/report_fields.hpp"
#include "report/run_report.hpp"
#include "scheduler/timeline.hpp"

namespace podsim::report {

// The report for a person: summary, where the time went, memory, op categories.
std::string format_table(const RunReport& report);

// A numeric field's value as JSON: null when unknown (NaN) or not finite, integers as integers,
// booleans as true or false.
nlohmann::ordered_json number_json(FieldType type, double value);

// One JSON object, schema podsim.report/v1; numbers are plain SI (seconds, bytes, FLOPs).
std::string format_json(const RunReport& report);

// Chrome trace event format (opens in Perfetto and chrome://tracing): one track per resource
// (compute, each ICI axis, DCN, host) and a counter track of live HBM bytes.
std::string chrome_trace(const std::string& name, const parallel::DeviceProgram& program,
                         const scheduler::Timeline& timeline, const memory::MemoryProfile& memory);

}  // namespace podsim::report
