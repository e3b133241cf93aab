#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace podsim::core {

// One CSV line into fields (RFC 4180 quoting: "a,b" and "" for a quote inside a quoted field).
std::vector<std::string> split_csv_line(std::string_view line);

// A field quoted when it holds a comma, a quote or a newline (newlines become spaces).
std::string csv_field(std::string_view value);

}  // namespace podsim::core
