#include "core/engine.hpp"

#include "core/assert.hpp"

namespace podsim::core {

void Engine::schedule_at(Time when, EventHandler& handler, std::uint64_t tag) {
    PODSIM_ASSERT(when >= now_, "event scheduled in the past");
    queue_.push(Event{when, next_sequence_++, &handler, tag});
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
