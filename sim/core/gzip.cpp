#include "core/gzip.hpp"

#include <zlib.h>

#include <fmt/format.h>

namespace podsim::core {

bool is_gzip(const std::string& bytes) {
    return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
           static_cast<unsigned char>(bytes[1]) == 0x8b;
}

namespace {

// Inflates until the end of the data, or until `limit` bytes are out (then `truncate` decides
// whether that is an error or the prefix asked for).
FileBytes inflate_bounded(const std::string& bytes, std::uint64_t limit, bool truncate) {
    FileBytes result;
    // Inflate from memory (gzip header: windowBits 15 + 16).
    z_stream z{};
    if (inflateInit2(&z, 15 + 16) != Z_OK) {
        result.error = "cannot start gzip decompression";
        return result;
    }
    std::string& out = result.bytes;
    char buffer[1 << 16];
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
    z.avail_in = static_cast<uInt>(bytes.size());
    int status = Z_OK;
    while (status == Z_OK) {
        z.next_out = reinterpret_cast<Bytef*>(buffer);
        z.avail_out = sizeof buffer;
        status = inflate(&z, Z_NO_FLUSH);
        out.append(buffer, sizeof buffer - z.avail_out);
        if (out.size() > limit) {
            inflateEnd(&z);
            if (truncate) {
                out.resize(limit);
                return result;
            }
            out.clear();
            result.error =
                fmt::format("gzip data decompresses to more than {}, the limit for this kind of file",
                            format_byte_limit(limit));
            return result;
        }
    }
    const std::string why = z.msg ? z.msg : "";
    inflateEnd(&z);
    if (status != Z_STREAM_END) {
        result.error = fmt::format("corrupt or truncated gzip data after {} bytes{}", out.size(),
                                   why.empty() ? std::string() : ": " + why);
        out.clear();
    }
    return result;
}

}  // namespace

FileBytes gunzip(const std::string& bytes, std::uint64_t max_bytes) {
    return inflate_bounded(bytes, max_bytes, false);
}

FileBytes gunzip_prefix(const std::string& bytes, std::uint64_t prefix_bytes) {
    return inflate_bounded(bytes, prefix_bytes, true);
}

FileBytes read_maybe_gzipped(const std::string& path, std::uint64_t max_bytes) {
    FileBytes file = read_regular_file(path, max_bytes);
    if (!file.error.empty() || !is_gzip(file.bytes)) return file;
    return gunzip(file.bytes, max_bytes);
}

}  // namespace podsim::core
