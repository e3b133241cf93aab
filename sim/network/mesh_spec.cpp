#include "network/mesh_spec.hpp"

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
    return out;
}

}  // namespace podsim::network
