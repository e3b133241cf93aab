#include "core/engine.hpp"

#include "core/assert.hpp"

namespace podsim::core {

void Engine::schedule_at(Time when, EventHandler& handler, std::uint64_t tag) {
    PODSIM_ASSERT(when >= now_, "event scheduled in the past");
    queue_.push(Event{when, next_sequence_++, &handler, tag});
}

void Engine::schedule_after(Time delay, EventHandler& handler, std::uint64_t tag) {
    PODSIM_ASSERT(delay >= 0, "negative delay");
    if (delay > kMaxTime - now_) {
        throw TimeOverflow("the simulated time passes the limit of int64 picoseconds (about 106 days)");
    }
    schedule_at(now_ + delay, handler, tag);
}

Time Engine::run() {
    while (!queue_.empty()) {
        Event event = queue_.top();
        queue_.pop();
        now_ = event.when;
        ++events_processed_;
        event.handler->on_event(now_, event.tag);
    }
    return now_;
}

}  // namespace podsim::core
