#include "hlo/replica_groups.hpp"

#include <algorithm>
#include <cctype>
#include <numeric>
#include <string_view>

#include <fmt/format.h>

namespace podsim::hlo {
namespace {

// A small cursor over the attribute's text.
class Cursor {
  public:
    explicit Cursor(std::string_view text) : s_(text) {}
    void skip_space() {
        while (i_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[i_]))) ++i_;
    }
    bool eat(char c) {
        skip_space();
        if (i_ < s_.size() && s_[i_] == c) {
            ++i_;
            return true;
        }
        return false;
    }
    bool eat(std::string_view word) {
        skip_space();
        if (s_.substr(i_, word.size()) == word) {
            i_ += word.size();
            return true;
        }
        return false;
    }
    std::optional<std::int64_t> integer() {
        skip_space();
        std::size_t start = i_;
        if (i_ < s_.size() && s_[i_] == '-') ++i_;
        std::int64_t value = 0;
        bool digits = false;
        while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
            if (value > (INT64_MAX - 9) / 10) return std::nullopt;
            value = value * 10 + (s_[i_] - '0');
            ++i_;
            digits = true;
        }
        if (!digits) {
            i_ = start;
            return std::nullopt;
        }
        return s_[start] == '-' ? -value : value;
    }
    // {a,b,c} or [a,b,c] or (a,b,c) of integers.
    std::optional<std::vector<std::int64_t>> integer_list(char open, char close) {
        if (!eat(open)) return std::nullopt;
        std::vector<std::int64_t> out;
        if (eat(close)) return out;
        while (true) {
            auto v = integer();
            if (!v) return std::nullopt;
            out.push_back(*v);
            if (eat(close)) return out;
            if (!eat(',')) return std::nullopt;
        }
    }
    std::optional<std::string> quoted() {
        skip_space();
        if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) return std::nullopt;
        const char quote = s_[i_++];
        std::size_t end = s_.find(quote, i_);
        if (end == std::string_view::npos) return std::nullopt;
        std::string out(s_.substr(i_, end - i_));
        i_ = end + 1;
        return out;
    }
    bool at_end() {
        skip_space();
        return i_ >= s_.size();
    }

  private:
    std::string_view s_;
    std::size_t i_ = 0;
};

constexpr std::int64_t kMaxDevices = 1 << 20;

std::int64_t product(const std::vector<std::int64_t>& v) {
    std::int64_t p = 1;
    for (std::int64_t x : v) {
        if (x <= 0 || p > kMaxDevices / x) return -1;
        p *= x;
    }
    return p;
}

bool is_permutation_of_rank(const std::vector<int>& perm, std::size_t rank) {
    if (perm.size() != rank) return false;
    std::vector<int> sorted = perm;
    std::sort(sorted.begin(), sorted.end());
    for (std::size_t i = 0; i < sorted.size(); ++i) {
        if (sorted[i] != static_cast<int>(i)) return false;
    }
    return true;
}

// The elements of `values` (row-major over `dims`) in the order of the array transposed by `perm`.
std::vector<std::int64_t> transposed(const std::vector<std::int64_t>& values,
                                     const std::vector<std::int64_t>& dims, const std::vector<int>& perm) {
    const std::size_t rank = dims.size();
    std::vector<std::int64_t> stride(rank, 1);
    for (std::size_t i = rank; i-- > 1;) stride[i - 1] = stride[i] * dims[i];
    std::vector<std::int64_t> out;
    out.reserve(values.size());
    std::vector<std::int64_t> index(rank, 0);
    for (std::size_t n = 0; n < values.size(); ++n) {
        std::int64_t source = 0;
        for (std::size_t i = 0; i < rank; ++i) source += index[i] * stride[static_cast<std::size_t>(perm[i])];
        out.push_back(values[static_cast<std::size_t>(source)]);
        for (std::size_t i = rank; i-- > 0;) {
            if (++index[i] < dims[static_cast<std::size_t>(perm[i])]) break;
            index[i] = 0;
        }
    }
    return out;
}

std::vector<std::vector<std::int64_t>> chunk(const std::vector<std::int64_t>& devices, std::int64_t size) {
    std::vector<std::vector<std::int64_t>> groups;
    if (size <= 0) return groups;
    for (std::size_t i = 0; i + static_cast<std::size_t>(size) <= devices.size();
         i += static_cast<std::size_t>(size))
        groups.emplace_back(devices.begin() + static_cast<std::ptrdiff_t>(i),
                            devices.begin() + static_cast<std::ptrdiff_t>(i) + size);
    return groups;
}

}  // namespace

std::vector<std::int64_t> iota_devices(const std::vector<std::int64_t>& reshape_dims,
                                       const std::vector<int>& transpose) {
    const std::int64_t n = product(reshape_dims);
    std::vector<std::int64_t> values(static_cast<std::size_t>(std::max<std::int64_t>(n, 0)));
    std::iota(values.begin(), values.end(), 0);
    if (transpose.empty()) return values;
    return transposed(values, reshape_dims, transpose);
}

std::optional<ReplicaGroups> parse_replica_groups(const std::string& text, std::string& error) {
    ReplicaGroups g;
    g.text = text;
    Cursor c(text);
    if (c.eat("mesh[")) {
        g.form = ReplicaGroups::Form::mesh_axes;
        while (true) {
            if (c.eat("device_ids=")) {
                auto ids = c.integer_list('[', ']');
                if (!ids) {
                    error = "device_ids=[...] of the mesh is not a list of integers";
                    return std::nullopt;
                }
                g.mesh_device_ids = *ids;
            } else {
                auto name = c.quoted();
                if (!name || !c.eat('=')) {
                    error = "a mesh axis is written 'name'=size";
                    return std::nullopt;
                }
                auto size = c.integer();
                if (!size || *size <= 0) {
                    error = fmt::format("mesh axis '{}' has no positive size", *name);
                    return std::nullopt;
                }
                g.mesh.push_back({*name, *size});
            }
            if (c.eat(']')) break;
            if (!c.eat(',')) {
                error = "mesh[...] lists 'name'=size separated by commas";
                return std::nullopt;
            }
        }
        if (!c.eat('{')) {
            error = "mesh[...] is followed by the grouped axes in braces, e.g. {'axis_0'}";
            return std::nullopt;
        }
        while (!c.eat('}')) {
            auto name = c.quoted();
            if (!name) {
                error = "grouped axes are quoted names, e.g. {'axis_0'}";
                return std::nullopt;
            }
            auto it =
                std::find_if(g.mesh.begin(), g.mesh.end(), [&](const auto& a) { return a.name == *name; });
            if (it == g.mesh.end()) {
                error = fmt::format("grouped axis '{}' is not an axis of the mesh", *name);
                return std::nullopt;
            }
            ReplicaGroups::AxisRef ref;
            ref.axis = static_cast<int>(it - g.mesh.begin());
            if (c.eat(':')) {  // sub-axis 'a':(pre)size
                auto pre = c.integer_list('(', ')');
                auto size = c.integer();
                if (!pre || pre->size() != 1 || !size || (*pre)[0] <= 0 || *size <= 0 ||
                    it->size % ((*pre)[0] * *size) != 0) {
                    error = fmt::format("sub-axis of '{}' is written '{}':(pre-size)size, both dividing {}",
                                        *name, *name, it->size);
                    return std::nullopt;
                }
                ref.pre_size = (*pre)[0];
                ref.size = *size;
            }
            g.axes.push_back(ref);
            c.eat(',');
        }
        if (g.axes.empty()) {
            error = "mesh replica groups name no axis";
            return std::nullopt;
        }
        std::vector<std::int64_t> sizes;
        for (const auto& a : g.mesh) sizes.push_back(a.size);
        const std::int64_t devices = product(sizes);
        if (devices < 0) {
            error = "the mesh has too many devices";
            return std::nullopt;
        }
        if (!g.mesh_device_ids.empty() && static_cast<std::int64_t>(g.mesh_device_ids.size()) != devices) {
            error = fmt::format("device_ids lists {} devices, the mesh has {}", g.mesh_device_ids.size(),
                                devices);
            return std::nullopt;
        }
    } else if (text.find("<=") != std::string::npos) {
        g.form = ReplicaGroups::Form::iota;
        auto shape = c.integer_list('[', ']');
        if (!shape || shape->size() != 2 || !c.eat("<=")) {
            error = "iota replica groups are written [groups,size]<=[dims]T(perm)";
            return std::nullopt;
        }
        auto dims = c.integer_list('[', ']');
        if (!dims || dims->empty()) {
            error = "iota replica groups need the reshape dimensions after <=";
            return std::nullopt;
        }
        g.num_groups = (*shape)[0];
        g.group_size = (*shape)[1];
        g.reshape_dims = *dims;
        if (c.eat('T')) {
            auto perm = c.integer_list('(', ')');
            if (!perm) {
                error = "T(...) lists the transpose permutation";
                return std::nullopt;
            }
            for (std::int64_t p : *perm) g.transpose.push_back(static_cast<int>(p));
            if (!is_permutation_of_rank(g.transpose, g.reshape_dims.size())) {
                error = fmt::format("T({}) is not a permutation of the {} reshape dimensions",
                                    fmt::join(*perm, ","), g.reshape_dims.size());
                return std::nullopt;
            }
        }
        const std::int64_t n = product(g.reshape_dims);
        if (n < 0 || g.num_groups <= 0 || g.group_size <= 0 || g.num_groups * g.group_size != n) {
            error = fmt::format("[{},{}] groups do not cover the {} devices of the iota", g.num_groups,
                                g.group_size, n);
            return std::nullopt;
        }
    } else {
        g.form = ReplicaGroups::Form::explicit_list;
        if (!c.eat('{')) {
            error = "replica groups are {{...},...}, [groups,size]<=[dims], or mesh[...] {...}";
            return std::nullopt;
        }
        while (!c.eat('}')) {
            auto list = c.integer_list('{', '}');
            if (!list) {
                error = "an explicit replica group is a list of device ids in braces";
                return std::nullopt;
            }
            for (std::int64_t id : *list) {
                if (id < 0 || id >= kMaxDevices) {
                    error = fmt::format("device id {} is out of range", id);
                    return std::nullopt;
                }
            }
            g.lists.push_back(std::move(*list));
            c.eat(',');
        }
    }
    if (!c.at_end()) {
        error = "unexpected text after the replica groups";
        return std::nullopt;
    }
    return g;
}

std::vector<std::vector<std::int64_t>> ReplicaGroups::expand(std::int64_t devices) const {
    switch (form) {
        case Form::none:
            break;
        case Form::explicit_list:
            if (!lists.empty()) return lists;
            break;
        case Form::iota:
            return chunk(iota_devices(reshape_dims, transpose), group_size);
        case Form::mesh_axes: {
            // Each grouped (sub-)axis becomes a dimension of its own, the mesh is reshaped to them,
            // the grouped dimensions go last (in mesh order) and every run of them is a group.
            std::vector<std::int64_t> sizes;
            std::vector<int> grouped;
            std::int64_t group = 1;
            for (std::size_t d = 0; d < mesh.size(); ++d) {
                std::vector<AxisRef> refs;
                for (const AxisRef& a : axes) {
                    if (a.axis == static_cast<int>(d)) refs.push_back(a);
                }
                const std::int64_t full = mesh[d].size;
                if (refs.empty()) {
                    sizes.push_back(full);
                    continue;
                }
                if (refs.size() == 1 && refs[0].pre_size == 0) {
                    grouped.push_back(static_cast<int>(sizes.size()));
                    sizes.push_back(full);
                    group *= full;
                    continue;
                }
                std::sort(refs.begin(), refs.end(),
                          [](const AxisRef& a, const AxisRef& b) { return a.pre_size < b.pre_size; });
                std::int64_t prefix = 1;
                for (const AxisRef& r : refs) {
                    const std::int64_t pre = std::max<std::int64_t>(r.pre_size, 1);
                    if (pre != prefix && pre % prefix == 0) {
                        sizes.push_back(pre / prefix);
                        prefix = pre;
                    }
                    grouped.push_back(static_cast<int>(sizes.size()));
                    sizes.push_back(r.size);
                    group *= r.size;
                    prefix *= r.size;
                }
                if (prefix < full && full % prefix == 0) sizes.push_back(full / prefix);
            }
            std::vector<int> perm;
            for (int i = 0; i < static_cast<int>(sizes.size()); ++i) {
                if (std::find(grouped.begin(), grouped.end(), i) == grouped.end()) perm.push_back(i);
            }
            perm.insert(perm.end(), grouped.begin(), grouped.end());
            std::vector<std::int64_t> ids = mesh_device_ids;
            if (ids.empty()) ids = iota_devices(sizes, {});
            if (static_cast<std::int64_t>(ids.size()) != product(sizes)) break;
            return chunk(transposed(ids, sizes, perm), group);
        }
    }
    std::vector<std::int64_t> all(static_cast<std::size_t>(std::max<std::int64_t>(devices, 1)));
    std::iota(all.begin(), all.end(), 0);
    return {all};
}

}  // namespace podsim::hlo
