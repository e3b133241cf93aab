#include "profile/measured_profile.hpp"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "core/bounded_file.hpp"
#include "core/diagnostics.hpp"
#include "core/gzip.hpp"
#include "profile/pt_xla_debug.hpp"
#include "profile/readers_common.hpp"

// Format detection: which reader a file goes to, by content (after gunzip and untar).

namespace podsim::profile {
namespace {

// Profiles of a large job run to hundreds of MB; beyond 1 GiB (raw or decompressed) podsim would
// need several times that in memory to parse it.
constexpr std::uint64_t kMaxProfileBytes = std::uint64_t{1} << 30;

}  // namespace

std::string read_file_bytes(const std::string& path) {
    core::FileBytes file = core::read_maybe_gzipped(path, kMaxProfileBytes);
    if (!file.error.empty()) profile_error(path, 0, file.error);
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
    if (const auto hash = path.rfind('#'); hash != std::string::npos) {
        const std::string file = path.substr(0, hash);
        return read_xla_memory_jsonl(file, read_file_bytes(file), path.substr(hash + 1));
    }
    std::string bytes = read_file_bytes(path);
    if (bytes.size() > 512 && bytes.compare(257, 5, "ustar") == 0) {
        auto et = tar_member(path, bytes, ".et");
        if (!et) profile_error(path, 0, "a tar archive without a Chakra .et member");
        return read_chakra_et(path, *et);
    }
    auto ends_with = [&path](std::string_view suffix) {
        return path.size() >= suffix.size() &&
               path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
    };
    if (ends_with(".et")) return read_chakra_et(path, bytes);
    // An HloProto and an XSpace both open with a length-delimited field 1: told apart by name.
    if (ends_with(".hlo.pb") || ends_with(".hlo.pb.gz")) return read_hlo_proto(path, bytes);
    std::size_t first = bytes.find_first_not_of(" \t\r\n");
    if (first == std::string::npos) profile_error(path, 0, "empty file");
    if (bytes[first] == '{' || bytes[first] == '[') {
        if (bytes.find("\"podStatsSequence\"") != std::string::npos) return read_pod_viewer_profile(path);
        // XLA memory_analysis() JSON lines hold one compiled step per line: FILE#NAME picks one.
        if (bytes[first] == '{' && bytes.find("\"memory_analysis\"") != std::string::npos &&
            bytes.find("\"traceEvents\"") == std::string::npos)
            return read_xla_memory_jsonl(path, bytes, "");
        return read_chrome_trace(path, bytes);
    }
    if (is_pt_xla_debug_log(bytes) && bytes.find("Metric: ") == std::string::npos)
        return read_pt_xla_debug_log(path, bytes);
    if (bytes.find("Metric: ") != std::string::npos || bytes.find("Counter: ") != std::string::npos) {
        return read_pytorch_xla_metrics(path, bytes);
    }
    if (bytes.rfind("Name,Projected Start,Projected Duration", first) == first) {
        return read_nvtx_projection_csv(path, bytes);
    }
    std::string head = bytes.substr(0, std::min<std::size_t>(bytes.size(), 400));
    for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto has = [&head](const char* needle) { return head.find(needle) != std::string::npos; };
    if (has("operation") && has("self") && has(",")) return read_hlo_op_stats_csv(path, bytes);
    // Left: XProf's binary protobuf. Text is none of the formats; say what was found.
    const std::string_view start = std::string_view(bytes).substr(first, 512);
    const bool text = std::all_of(start.begin(), start.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return u >= 0x20 || c == '\n' || c == '\r' || c == '\t';
    });
    if (text) {
        const std::string line = std::string(start.substr(0, start.find_first_of("\r\n")));
        const std::string shown = line.size() > 60 ? line.substr(0, 57) + "..." : line;
        std::string found = fmt::format("text starting '{}'", shown);
        if (line.rfind("HloModule", 0) == 0)
            found = "an HLO module's text (compiler output, not a measurement)";
        profile_error(
            path, first,
            fmt::format("not a profile format podsim reads: found {}; expected a Chrome trace (JSON), "
                        "an XProf .xplane.pb or pod_viewer JSON, an HLO op stats CSV (header with "
                        "Operation and Self time), a PyTorch/XLA metrics report (Metric: lines) or "
                        "PT_XLA_DEBUG log, an "
                        "NVTX projection CSV or a Chakra .et",
                        found));
    }
    try {
        return read_xplane(path, bytes);
    } catch (const core::UserError& e) {
        const auto& item = e.diagnostics().items().front();
        profile_error(path, 0,
                      fmt::format("binary data that is no format podsim reads (the only binary one, an XProf "
                                  ".xplane.pb, did not parse: {})",
                                  item.message));
    }
}

}  // namespace podsim::profile
