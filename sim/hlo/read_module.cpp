#include "hlo/read_module.hpp"

#include "core/diagnostics.hpp"
#include "core/gzip.hpp"
#include "hlo/proto_reader.hpp"
#include "hlo/text_reader.hpp"

namespace podsim::hlo {
namespace {

// A compiled module of a large model runs to tens of MB as text (an unrolled 70B step); beyond this
// the flattened program would not fit a simulation op by op anyway.
constexpr std::uint64_t kMaxModuleBytes = std::uint64_t{1} << 30;

bool ends_with(const std::string& s, std::string_view suffix) {
    return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool is_hlo_module(const std::string& path, std::string_view bytes) {
    if (looks_like_hlo_text(bytes)) return true;
    return ends_with(path, ".hlo.pb") || ends_with(path, ".hlo.pb.gz") || ends_with(path, ".hlo_module.pb");
}

Module read_module(const std::string& name, const std::string& bytes) {
    if (core::is_gzip(bytes)) {
        core::FileBytes inflated = core::gunzip(bytes, kMaxModuleBytes);
        if (!inflated.error.empty()) {
            core::Diagnostics d;
            d.error({name, 0, 0}, "", inflated.error);
            throw core::UserError(d);
        }
        return read_module(name, inflated.bytes);
    }
    if (looks_like_hlo_text(bytes)) return read_text(name, bytes);
    return read_proto(name, bytes);
}

Module read_module_file(const std::string& path) {
    core::FileBytes file = core::read_regular_file(path, kMaxModuleBytes);
    if (!file.error.empty()) {
        core::Diagnostics d;
        d.error({path, 0, 0}, "", file.error);
        throw core::UserError(d);
    }
    return read_module(path, file.bytes);
}

}  // namespace podsim::hlo
