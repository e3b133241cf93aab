#include "network/mesh_spec.hpp"

#include <charconv>

namespace podsim::network {
namespace {
long product(const std::vector<MeshAxis>& axes) {
    long n = 1;
    for (const auto& a : axes) n *= a.size;
    return n;
}
long product_of(const std::vector<MeshAxis>& axes, const std::string& name) {
    long n = 1;
    for (const auto& a : axes) {
        if (a.name == name) n *= a.size;
    }
    return n;
}
std::string join(const std::vector<MeshAxis>& axes) {
    std::string out;
    for (const auto& a : axes) {
        if (!out.empty()) out += ", ";
        out += a.name + "=" + std::to_string(a.size);
    }
    return out;
}
}  // namespace

long MeshSpec::ici_size() const {
    return product(ici);
}
long MeshSpec::dcn_size() const {
    return product(dcn);
}
long MeshSpec::size_of(const std::string& name) const {
    return ici_size_of(name) * dcn_size_of(name);
}
long MeshSpec::ici_size_of(const std::string& name) const {
    return product_of(ici, name);
}
long MeshSpec::dcn_size_of(const std::string& name) const {
    return product_of(dcn, name);
}

std::string MeshSpec::to_string() const {
    std::string out = "ici{" + join(ici) + "}";
    if (!dcn.empty()) out += " dcn{" + join(dcn) + "}";
    if (!custom.empty()) out += " " + custom;
    return out;
}

std::optional<std::vector<MeshAxis>> parse_axis_list(std::string_view text) {
    std::vector<MeshAxis> axes;
    std::size_t start = 0;
    while (start < text.size()) {
        std::size_t end = text.find(',', start);
        if (end == std::string_view::npos) end = text.size();
        std::string_view item = text.substr(start, end - start);
        std::size_t eq = item.find('=');
        if (eq == std::string_view::npos || eq == 0) return std::nullopt;
        int size = 0;
        auto digits = item.substr(eq + 1);
        auto [ptr, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), size);
        if (ec != std::errc() || ptr != digits.data() + digits.size() || size <= 0) return std::nullopt;
        axes.push_back(MeshAxis{std::string(item.substr(0, eq)), size});
        start = end + 1;
    }
    if (axes.empty()) return std::nullopt;
    return axes;
}

}  // namespace podsim::network
