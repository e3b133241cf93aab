#pragma once

#include <cstdint>
#include <istream>
#include <string>

namespace podsim::core {

// The bytes of a file, or why they cannot be had (`error` non-empty, one line, no file name).
struct FileBytes {
    std::string bytes;
    std::string error;
};

// Reads a whole regular file of at most `max_bytes`. Anything else is refused before it is read:
// a device such as /dev/zero never ends, a FIFO blocks until some writer comes, a directory has no
// bytes. The size is checked before reading and again while reading (the file may grow).
FileBytes read_regular_file(const std::string& path, std::uint64_t max_bytes);

// A stream (standard input) read to its end, or refused once it passes `max_bytes`: what
// read_regular_file allows a file, no more.
FileBytes read_stream(std::istream& in, std::uint64_t max_bytes);

// The largest config file (run, model, topology, sweep, calibration) podsim reads: no sane one is
// larger.
inline constexpr std::uint64_t kMaxConfigBytes = 16u << 20;

// "16 MiB", "1 GiB", "512 bytes": a limit as a person reads it.
std::string format_byte_limit(std::uint64_t bytes);

}  // namespace podsim::core
