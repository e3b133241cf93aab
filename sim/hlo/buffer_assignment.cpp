#include "hlo/buffer_assignment.hpp"

#include <algorithm>

namespace podsim::hlo {
namespace {

// Held for the whole execution: what XLA's ComputeIndefiniteAllocationsInBytes counts.
bool indefinite(const BufferAssignment::Allocation& a) {
    return a.is_entry_parameter || a.is_constant || a.maybe_live_out || a.is_thread_local;
}

}  // namespace

double BufferAssignment::indefinite_bytes() const {
    double sum = 0.0;
    for (const auto& a : allocations) {
        if (a.color == 0 && indefinite(a)) sum += static_cast<double>(a.size);
    }
    return sum;
}

double BufferAssignment::parameter_bytes() const {
    double sum = 0.0;
    for (const auto& a : allocations) {
        if (a.color == 0 && a.is_entry_parameter) sum += static_cast<double>(a.size);
    }
    return sum;
}

double BufferAssignment::temp_bytes() const {
    double sum = 0.0;
    for (const auto& a : allocations) {
        if (a.color == 0 && !indefinite(a)) sum += static_cast<double>(a.size);
    }
    return sum;
}

double BufferAssignment::heap_peak_bytes() const {
    // Replays each temporary allocation's heap-simulator trace: ALLOC adds a buffer's bytes; a buffer
    // that SHARE_WITHs a canonical one adds nothing but keeps it alive (re-adding it when the
    // canonical was already freed); FREE drops the canonical's bytes when its last sharer goes.
    // The peaks of the traces add up (each trace is its own allocation). An allocation without a
    // trace counts whole.
    double total = 0.0;
    std::vector<bool> traced(allocations.size(), false);
    for (const Trace& trace : traces) {
        const auto it = std::find_if(allocations.begin(), allocations.end(),
                                     [&](const Allocation& a) { return a.index == trace.allocation; });
        if (it != allocations.end()) {
            if (it->color != 0 || indefinite(*it)) continue;
            traced[static_cast<std::size_t>(it - allocations.begin())] = true;
        }
        std::unordered_map<std::int64_t, std::int64_t> canonical;
        std::unordered_map<std::int64_t, int> sharers;
        double live = 0.0, peak = 0.0;
        auto size_of = [&](std::int64_t buffer) {
            auto found = logical_buffer_size.find(buffer);
            return found == logical_buffer_size.end() ? 0.0 : static_cast<double>(found->second);
        };
        for (const Event& e : trace.events) {
            switch (e.kind) {
                case EventKind::alloc:
                    canonical[e.buffer] = e.buffer;
                    sharers[e.buffer] = 1;
                    live += size_of(e.buffer);
                    break;
                case EventKind::share_with: {
                    auto c = canonical.find(e.share_with);
                    const std::int64_t owner = c == canonical.end() ? e.share_with : c->second;
                    canonical[e.buffer] = owner;
                    if (sharers[owner]++ == 0) live += size_of(owner);
                    break;
                }
                case EventKind::free: {
                    auto c = canonical.find(e.buffer);
                    if (c == canonical.end()) break;
                    const std::int64_t owner = c->second;
                    if (--sharers[owner] == 0) live -= size_of(owner);
                    break;
                }
            }
            peak = std::max(peak, live);
        }
        total += peak;
    }
    for (std::size_t i = 0; i < allocations.size(); ++i) {
        const Allocation& a = allocations[i];
        if (!traced[i] && !a.is_tuple && a.color == 0 && !indefinite(a)) total += static_cast<double>(a.size);
    }
    return total;
}

}  // namespace podsim::hlo
