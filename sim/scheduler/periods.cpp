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

bool identical_blocks(const parallel::DeviceProgram& program, const OpBehaviour& behaviour,
                      PeriodicRegion& region) {
    if (region.length == 0 || region.count < 2 || region.end() > program.ops.size()) return false;
    for (std::size_t i = region.first_op + region.length; i < region.end(); ++i)
        if (!same_op(program, behaviour, i - region.length, i)) return false;
    region.dependency_span = 0;
    for (std::size_t i = region.first_op; i < region.end(); ++i)
        for (std::size_t p = behaviour.pred_begin[i]; p < behaviour.pred_begin[i + 1]; ++p)
            region.dependency_span =
                std::max(region.dependency_span, i - static_cast<std::size_t>(behaviour.preds[p]));
    return true;
}

}  // namespace podsim::scheduler
