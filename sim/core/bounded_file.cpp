#include "core/bounded_file.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

namespace podsim::core {
namespace {

const char* kind_of(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

std::string not_regular(mode_t mode) {
    return fmt::format("is {}, not a regular file; podsim reads its inputs from regular files only",
                       kind_of(mode));
}

std::string too_large(std::uint64_t size, std::uint64_t max_bytes) {
    return fmt::format("file is {} bytes; the limit for this kind of file is {}", size,
                       format_byte_limit(max_bytes));
}

}  // namespace

std::string format_byte_limit(std::uint64_t bytes) {
    constexpr std::uint64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
    if (bytes >= kGiB && bytes % kGiB == 0) return fmt::format("{} GiB", bytes / kGiB);
    if (bytes >= kMiB && bytes % kMiB == 0) return fmt::format("{} MiB", bytes / kMiB);
    if (bytes >= kKiB && bytes % kKiB == 0) return fmt::format("{} KiB", bytes / kKiB);
    return fmt::format("{} bytes", bytes);
}

FileBytes read_stream(std::istream& in, std::uint64_t max_bytes) {
    FileBytes out;
    char buffer[1 << 16];
    while (in) {
        in.read(buffer, sizeof buffer);
        const auto n = static_cast<std::size_t>(in.gcount());
        if (out.bytes.size() + n > max_bytes) {
            out.bytes.clear();
            out.error = fmt::format("more than {} of input; the limit for this kind of file is {}",
                                    format_byte_limit(max_bytes), format_byte_limit(max_bytes));
            return out;
        }
        out.bytes.append(buffer, n);
    }
    return out;
}

FileBytes read_regular_file(const std::string& path, std::uint64_t max_bytes) {
    FileBytes out;
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
        out.error =
            errno == ENOENT ? "no such file" : fmt::format("cannot open the file ({})", std::strerror(errno));
        return out;
    }
    if (!S_ISREG(st.st_mode)) {
        out.error = not_regular(st.st_mode);
        return out;
    }
    if (static_cast<std::uint64_t>(st.st_size) > max_bytes) {
        out.error = too_large(static_cast<std::uint64_t>(st.st_size), max_bytes);
        return out;
    }
    // O_NONBLOCK: should the path have become a FIFO since stat, open must not wait for a writer.
    const int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        out.error = fmt::format("cannot open the file ({})", std::strerror(errno));
        return out;
    }
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        out.error = not_regular(st.st_mode);
        ::close(fd);
        return out;
    }
    out.bytes.reserve(static_cast<std::size_t>(st.st_size));
    char buffer[1 << 16];
    while (true) {
        const ssize_t n = ::read(fd, buffer, sizeof buffer);
        if (n < 0) {
            if (errno == EINTR) continue;
            out.error = fmt::format("cannot read the file ({})", std::strerror(errno));
            out.bytes.clear();
            break;
        }
        if (n == 0) break;
        if (out.bytes.size() + static_cast<std::size_t>(n) > max_bytes) {
            out.error = too_large(out.bytes.size() + static_cast<std::size_t>(n), max_bytes);
            out.bytes.clear();
            break;
        }
        out.bytes.append(buffer, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return out;
}

}  // namespace podsim::core
