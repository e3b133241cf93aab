#include "core/engine.hpp"

#include <algorithm>

#include "core/assert.hpp"

namespace podsim::core {

void Engine::schedule_at(Time when, EventHandler& handler, std::uint64_t tag) {
    PODSIM_ASSERT(when >= now_, "event scheduled in the past");
    queue_.push_back(Event{when, next_sequence_++, &handler, tag});
    std::push_heap(queue_.begin(), queue_.end(), Later{});
}

void Engine::schedule_after(Time delay, EventHandler& handler, std::uint64_t tag) {
    PODSIM_ASSERT(delay >= 0, "negative delay");
    if (delay > kMaxTime - now_) {
        throw TimeOverflow("the simulated time passes the limit of int64 picoseconds (about 106 days)");
    }
    schedule_at(now_ + delay, handler, tag);
}

bool Engine::step() {
    if (queue_.empty()) return false;
    std::pop_heap(queue_.begin(), queue_.end(), Later{});
    const Event event = queue_.back();
    queue_.pop_back();
    now_ = event.when;
    ++events_processed_;
    event.handler->on_event(now_, event.tag);
    return true;
}

Time Engine::run() {
    while (step()) {
    }
    return now_;
}

std::vector<Engine::Pending> Engine::pending() const {
    std::vector<Pending> out;
    pending(out);
    return out;
}

void Engine::pending(std::vector<Pending>& out) const {
    sorted_.assign(queue_.begin(), queue_.end());
    std::sort(sorted_.begin(), sorted_.end(), [](const Event& a, const Event& b) { return Later{}(b, a); });
    out.clear();
    for (const Event& e : sorted_) out.push_back(Pending{e.when, e.handler, e.tag});
}

void Engine::jump(Time delta, const std::function<std::uint64_t(const EventHandler&, std::uint64_t)>& retag) {
    PODSIM_ASSERT(delta >= 0, "a jump back in time");
    Time latest = now_;
    for (const Event& e : queue_) latest = std::max(latest, e.when);
    if (delta > kMaxTime - latest) {
        throw TimeOverflow("the simulated time passes the limit of int64 picoseconds (about 106 days)");
    }
    now_ += delta;
    // The same shift for every event keeps the heap ordered.
    for (Event& e : queue_) {
        e.when += delta;
        e.tag = retag(*e.handler, e.tag);
    }
}

}  // namespace podsim::core
