#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace podsim::core {

// One CSV line into fields (RFC 4180 quoting: "a,b" and "" for a quote inside a quoted field).
std::vector<std::string> split_csv_line(std::string_view line);

// `text` cut at each `separator`, empty pieces dropped (option lists such as "fsdp,tensor").
std::vector<std::string> split_list(std::string_view text, char separator);

// A field quoted when it holds a comma, a quote or a newline (newlines become spaces).
std::string csv_field(std::string_view value);

}  // namespace podsim::core
