#pragma once

#include <cstdint>
#include <string>

#include "core/bounded_file.hpp"

namespace podsim::core {

// Whether `bytes` start with the gzip magic number.
bool is_gzip(const std::string& bytes);

// The decompressed bytes of gzip data, bounded: a small .gz can expand to any size. On failure
// `error` says why (one line, no file name).
FileBytes gunzip(const std::string& bytes, std::uint64_t max_bytes);

// The first `prefix_bytes` (or fewer, when the data is shorter) of gzip data's decompressed bytes:
// enough to tell a format by its opening without inflating all of it. Corrupt data gives `error`.
FileBytes gunzip_prefix(const std::string& bytes, std::uint64_t prefix_bytes);

// A regular file of at most `max_bytes`, decompressed when it is gzipped (at most `max_bytes`
// decompressed as well).
FileBytes read_maybe_gzipped(const std::string& path, std::uint64_t max_bytes);

}  // namespace podsim::core
