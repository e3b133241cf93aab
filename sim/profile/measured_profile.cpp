#include "profile/measured_profile.hpp"

#include <zlib.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <optional>
#include <sstream>

#include <fmt/format.h>

#include "core/bounded_file.hpp"
#include "core/diagnostics.hpp"
#include "cost/matmul_shape.hpp"
#include "profile/pod_viewer.hpp"

namespace podsim::profile {
namespace {

// Profiles of a large job run to hundreds of MB; beyond 1 GiB (raw or decompressed) podsim would
// need several times that in memory to parse it.
constexpr std::uint64_t kMaxProfileBytes = std::uint64_t{1} << 30;

std::string lower(std::string s) {
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

bool has(const std::string& s, const char* needle) {
    return s.find(needle) != std::string::npos;
}

}  // namespace

void profile_error(const std::string& path, std::size_t offset, const std::string& message) {
    core::Diagnostics d;
    // Profiles are not line-oriented: the byte offset says where the problem is.
    d.error({path, 0, 0}, "", offset > 0 ? fmt::format("at byte {}: {}", offset, message) : message);
    throw core::UserError(d);
}

std::optional<std::map<std::string, double>> matmul_time_by_shape(const MeasuredProfile& profile,
                                                                  int mxu_tile) {
    if (profile.matmul_s_by_narrowest_dim.empty() || profile.matmul_unshaped_s > 0) return std::nullopt;
    std::map<std::string, double> by_shape;
    for (const auto& [narrowest, seconds] : profile.matmul_s_by_narrowest_dim) {
        by_shape[std::string(cost::shape_class_name(cost::matmul_shape_class(narrowest, mxu_tile)))] +=
            seconds;
    }
    return by_shape;
}

std::string classify_op(const std::string& name, const std::string& hint) {
    const std::string n = lower(name);
    const std::string h = lower(hint);
    static const char* kPodsim[] = {"matmul",     "fusion",     "all-gather",         "reduce-scatter",
                                    "all-reduce", "all-to-all", "collective-permute", "copy",
                                    "host"};
    for (const char* c : kPodsim) {
        if (h == c) return c;
    }
    auto any = [&](std::initializer_list<const char*> words) {
        for (const char* w : words) {
            if (has(n, w) || has(h, w)) return true;
        }
        return false;
    };
    if (any({"all-reduce", "allreduce", "all_reduce"})) return "all-reduce";
    if (any({"all-gather", "allgather", "all_gather"})) return "all-gather";
    if (any({"reduce-scatter", "reducescatter", "reduce_scatter"})) return "reduce-scatter";
    if (any({"all-to-all", "alltoall", "all_to_all"})) return "all-to-all";
    if (any({"collective-permute", "sendrecv", "send-done", "recv-done", "ncclkernel_sendrecv"})) {
        return "collective-permute";
    }
    if (any({"nccl"})) return "all-reduce";  // other NCCL kernels (broadcast, reduce) move gradients too
    if (any({"memcpy", "memset", "copy-start", "copy-done", "copy.", "copy ", "data formatting"}) ||
        n == "copy") {
        return "copy";
    }
    if (any({"convolution", "gemm", "matmul", "dot", "cutlass", "xmma", "conv", "cublas", "mma", "scudnn",
             "winograd"}))
        return "matmul";
    return "fusion";
}

std::string read_file_bytes(const std::string& path) {
    core::FileBytes file = core::read_regular_file(path, kMaxProfileBytes);
    if (!file.error.empty()) profile_error(path, 0, file.error);
    std::string& bytes = file.bytes;
    if (bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
        static_cast<unsigned char>(bytes[1]) == 0x8b) {
        // Inflate from memory (gzip header, windowBits 15 + 16), bounded: a small .gz can expand to
        // any size.
        z_stream z{};
        if (inflateInit2(&z, 15 + 16) != Z_OK) profile_error(path, 0, "cannot start gzip decompression");
        std::string out;
        char buffer[1 << 16];
        z.next_in = reinterpret_cast<Bytef*>(bytes.data());
        z.avail_in = static_cast<uInt>(bytes.size());
        int status = Z_OK;
        while (status == Z_OK) {
            z.next_out = reinterpret_cast<Bytef*>(buffer);
            z.avail_out = sizeof buffer;
            status = inflate(&z, Z_NO_FLUSH);
            out.append(buffer, sizeof buffer - z.avail_out);
            if (out.size() > kMaxProfileBytes) {
                inflateEnd(&z);
                profile_error(path, 0,
                              fmt::format("gzip data decompresses to more than {}, the limit for a profile",
                                          core::format_byte_limit(kMaxProfileBytes)));
            }
            if (status == Z_BUF_ERROR && z.avail_in > 0 && z.avail_out == 0) status = Z_OK;
        }
        const std::string why = z.msg ? z.msg : "";
        inflateEnd(&z);
        if (status != Z_STREAM_END) {
            profile_error(path, 0,
                          fmt::format("corrupt or truncated gzip data after {} bytes{}", out.size(),
                                      why.empty() ? std::string() : ": " + why));
        }
        return out;
    }
    return std::move(file.bytes);
}

namespace {

// The first member of a tar archive whose name ends in `suffix` (ustar headers of 512 bytes).
std::optional<std::string> tar_member(const std::string& path, const std::string& tar,
                                      const std::string& suffix) {
    std::size_t pos = 0;
    while (pos + 512 <= tar.size()) {
        std::string name = tar.substr(pos, 100).c_str();
        if (name.empty()) break;
        std::string prefix = tar.substr(pos + 345, 155).c_str();
        if (!prefix.empty()) name = prefix + "/" + name;
        std::size_t size = 0;
        for (std::size_t i = 124; i < 136 && tar[pos + i] >= '0' && tar[pos + i] <= '7'; ++i) {
            size = size * 8 + static_cast<std::size_t>(tar[pos + i] - '0');
        }
        if (size > tar.size() - pos - 512)
            profile_error(path, 0, fmt::format("tar member {} runs past the end of the archive", name));
        if (name.size() >= suffix.size() &&
            name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0) {
            return tar.substr(pos + 512, size);
        }
        pos += 512 + (size + 511) / 512 * 512;
    }
    return std::nullopt;
}

}  // namespace

MeasuredProfile read_profile(const std::string& path) {
    std::string bytes = read_file_bytes(path);
    if (bytes.size() > 512 && bytes.compare(257, 5, "ustar") == 0) {
        auto et = tar_member(path, bytes, ".et");
        if (!et) profile_error(path, 0, "a tar archive without a Chakra .et member");
        return read_chakra_et(path, *et);
    }
    if (path.size() > 3 && path.compare(path.size() - 3, 3, ".et") == 0) return read_chakra_et(path, bytes);
    std::size_t first = bytes.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) profile_error(path, 0, "empty file");
    if (bytes[first] == '{' || bytes[first] == '[') {
        if (bytes.find("\"podStatsSequence\"") != std::string::npos) {
            PodViewer pv = read_pod_viewer(path);
            MeasuredProfile p;
            p.format = "pod-viewer";
            p.file = path;
            p.steps = 1;
            for (const auto& ar : pv.all_reduces) {
                // durationUs is per occurrence; occurrences count cores, so one occurrence per step.
                p.category_s["all-reduce"] += ar.duration_s;
                ++p.category_count["all-reduce"];
                p.ops.push_back(MeasuredOp{ar.name, "all-reduce", ar.duration_s, 1, ar.data_bytes, 0.0});
            }
            double total = 0.0, compute = 0.0;
            for (const auto& c : pv.per_core) {
                total += c.total_s;
                compute += c.high_flops_compute_s;
            }
            if (!pv.per_core.empty()) {
                p.step_time_s = total / static_cast<double>(pv.per_core.size());
                p.category_s["matmul"] = compute / static_cast<double>(pv.per_core.size());
            }
            return p;
        }
        return read_chrome_trace(path, bytes);
    }
    if (bytes.find("Metric: ") != std::string::npos || bytes.find("Counter: ") != std::string::npos) {
        return read_pytorch_xla_metrics(path, bytes);
    }
    if (bytes.rfind("Name,Projected Start,Projected Duration", first) == first) {
        return read_nvtx_projection_csv(path, bytes);
    }
    std::string head = lower(bytes.substr(0, std::min<std::size_t>(bytes.size(), 400)));
    if (has(head, "operation") && has(head, "self") && has(head, ","))
        return read_hlo_op_stats_csv(path, bytes);
    return read_xplane(path, bytes);
}

}  // namespace podsim::profile
