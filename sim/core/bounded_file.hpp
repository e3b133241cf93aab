#pragma once

#include <cstdint>
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

// "16 MiB", "1 GiB", "512 bytes": a limit as a person reads it.
std::string format_byte_limit(std::uint64_t bytes);

}  // namespace podsim::core
