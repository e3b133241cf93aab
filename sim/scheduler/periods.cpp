#include "scheduler/periods.hpp"

#include <algorithm>
#include <tuple>

namespace podsim::scheduler {
namespace {

bool same_op(const parallel::DeviceProgram& program, const OpBehaviour& b, std::size_t i, std::size_t j) {
    if (program.ops[i].resource != program.ops[j].resource || b.duration[i] != b.duration[j] ||
        b.transfer[i] != b.transfer[j] || b.network[i] != b.network[j])
        return false;
    const std::size_t ni = b.pred_begin[i + 1] - b.pred_begin[i];
    if (ni != b.pred_begin[j + 1] - b.pred_begin[j]) return false;
    for (std::size_t e = 0; e < ni; ++e) {
        const auto pi = static_cast<std::size_t>(b.preds[b.pred_begin[i] + e]);
        const auto pj = static_cast<std::size_t>(b.preds[b.pred_begin[j] + e]);
        if (i - pi != j - pj) return false;
    }
    return true;
}

}  // namespace

std::vector<PeriodicRegion> periodic_regions(const parallel::DeviceProgram& program,
                                             const OpBehaviour& behaviour, std::size_t min_count) {
    const auto& ops = program.ops;
    std::vector<std::size_t> starts{0};
    bool seen_compute = false;
    std::tuple<int, int> last{};
    for (std::size_t i = 0; i < ops.size(); ++i) {
        const auto& resource = program.resources[static_cast<std::size_t>(ops[i].resource)];
        if (resource.kind != parallel::ResourceKind::compute) continue;
        auto key = std::make_tuple(ops[i].microbatch, ops[i].layer);
        if (seen_compute && key != last && i != starts.back()) starts.push_back(i);
        seen_compute = true;
        last = key;
    }
    starts.push_back(ops.size());
    auto same_block = [&](std::size_t b) {  // block b+1 repeats block b
        const std::size_t length = starts[b + 1] - starts[b];
        if (starts[b + 2] - starts[b + 1] != length) return false;
        for (std::size_t k = 0; k < length; ++k)
            if (!same_op(program, behaviour, starts[b] + k, starts[b] + length + k)) return false;
        return true;
    };
    std::vector<PeriodicRegion> regions;
    const std::size_t blocks = starts.size() - 1;
    for (std::size_t b = 0; b < blocks;) {
        std::size_t e = b;
        while (e + 1 < blocks && same_block(e)) ++e;
        const std::size_t count = e - b + 1;
        if (count >= min_count) {
            PeriodicRegion region{starts[b], starts[b + 1] - starts[b], count, 0};
            for (std::size_t i = region.first_op; i < region.end(); ++i)
                for (std::size_t p = behaviour.pred_begin[i]; p < behaviour.pred_begin[i + 1]; ++p)
                    region.dependency_span =
                        std::max(region.dependency_span, i - static_cast<std::size_t>(behaviour.preds[p]));
            regions.push_back(region);
        }
        b = e + 1;
    }
    return regions;
}

std::vector<bool> identical_two_blocks(const parallel::DeviceProgram& program, const OpBehaviour& behaviour,
                                       std::vector<PeriodicRegion>& regions) {
    std::vector<bool> identical(regions.size(), false);
    if (regions.empty()) return identical;
    const std::size_t length = regions.front().length;
    std::size_t begin = program.ops.size(), end = 0;
    for (const auto& r : regions) {
        if (r.length != length || length == 0 || r.first_op + 2 * length > program.ops.size()) continue;
        begin = std::min(begin, r.first_op);
        end = std::max(end, r.first_op + 2 * length);
    }
    if (begin >= end) return identical;
    // differs[i - begin]: ops that differ from the one a period before, counted up to i; and each
    // op's longest distance to a predecessor.
    std::vector<std::size_t> differs(end - begin + 1, 0);
    std::vector<std::size_t> span(end - begin, 0);
    for (std::size_t i = begin; i < end; ++i) {
        const bool differ = i < begin + length || !same_op(program, behaviour, i - length, i);
        differs[i - begin + 1] = differs[i - begin] + (differ ? 1 : 0);
        for (std::size_t p = behaviour.pred_begin[i]; p < behaviour.pred_begin[i + 1]; ++p)
            span[i - begin] = std::max(span[i - begin], i - static_cast<std::size_t>(behaviour.preds[p]));
    }
    for (std::size_t k = 0; k < regions.size(); ++k) {
        auto& r = regions[k];
        if (r.length != length || r.first_op + 2 * length > program.ops.size()) continue;
        const std::size_t second = r.first_op + length - begin, last = r.first_op + 2 * length - begin;
        if (differs[last] != differs[second]) continue;
        identical[k] = true;
        r.count = 2;
        r.dependency_span = *std::max_element(span.begin() + static_cast<std::ptrdiff_t>(r.first_op - begin),
                                              span.begin() + static_cast<std::ptrdiff_t>(last));
    }
    return identical;
}

}  // namespace podsim::scheduler
