#include "memory/buffer_profile.hpp"

#include <algorithm>
#include <array>

namespace podsim::memory {
namespace {

struct Event {
    core::Time time = 0;
    bool alloc = false;
    int buffer = 0;
};

void add(MemoryBreakdown& b, parallel::BufferHolder holder, double bytes) {
    using parallel::BufferHolder;
    switch (holder) {
        case BufferHolder::params:
            b.params += bytes;
            break;
        case BufferHolder::grads:
            b.grads += bytes;
            break;
        case BufferHolder::optimizer:
            b.optimizer += bytes;
            break;
        case BufferHolder::activations:
            b.activations += bytes;
            break;
        case BufferHolder::gathered_weights:
            b.gathered_weights += bytes;
            break;
        case BufferHolder::collective_buffers:
            b.collective_buffers += bytes;
            break;
        case BufferHolder::temporaries:
            b.temporaries += bytes;
            break;
    }
}

}  // namespace

MemoryProfile profile_buffers(const parallel::DeviceProgram& program, const scheduler::Timeline& timeline,
                              double capacity_bytes) {
    MemoryProfile profile;
    profile.capacity_bytes = capacity_bytes;
    const auto& spans = timeline.spans;
    const core::Time end = timeline.step_time;
    std::vector<Event> events;
    events.reserve(program.buffers.size() * 2);
    for (std::size_t i = 0; i < program.buffers.size(); ++i) {
        const parallel::Buffer& b = program.buffers[i];
        if (b.bytes <= 0.0) continue;
        const core::Time from = b.first_op >= 0 ? spans[static_cast<std::size_t>(b.first_op)].start : 0;
        const core::Time to =
            b.last_op >= 0 ? std::max(spans[static_cast<std::size_t>(b.last_op)].end, from) : end;
        events.push_back({from, true, static_cast<int>(i)});
        if (b.last_op >= 0) events.push_back({to, false, static_cast<int>(i)});
    }
    // By time; at one time frees first, then allocations in buffer order (program order).
    std::sort(events.begin(), events.end(), [](const Event& a, const Event& b) {
        if (a.time != b.time) return a.time < b.time;
        if (a.alloc != b.alloc) return !a.alloc;
        return a.buffer < b.buffer;
    });
    double live = 0.0;
    MemoryBreakdown now;
    profile.samples.reserve(events.size());
    for (std::size_t e = 0; e < events.size(); ++e) {
        const Event& ev = events[e];
        const parallel::Buffer& b = program.buffers[static_cast<std::size_t>(ev.buffer)];
        const double delta = ev.alloc ? b.bytes : -b.bytes;
        live += delta;
        add(now, b.holder, delta);
        if (ev.alloc && live > profile.peak_bytes) {
            profile.peak_bytes = live;
            profile.peak_time = ev.time;
            profile.peak_op = b.first_op;
            profile.at_peak = now;
        }
        // One sample per instant: the level after everything that happened then.
        if (e + 1 == events.size() || events[e + 1].time != ev.time)
            profile.samples.push_back({ev.time, live});
    }
    profile.fits = profile.peak_bytes <= capacity_bytes;
    profile.overflow_bytes = profile.fits ? 0.0 : profile.peak_bytes - capacity_bytes;
    return profile;
}

}  // namespace podsim::memory
