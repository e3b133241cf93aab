#pragma once

#include <cstdint>
#include <queue>
#include <vector>

#include "core/time.hpp"

namespace podsim::core {

// Anything that reacts to events. The engine knows nothing of what an event means: the handler gets
// back the tag it scheduled with (as in ns-3 and SimGrid, models live outside the kernel).
class EventHandler {
  public:
    virtual ~EventHandler() = default;
    virtual void on_event(Time now, std::uint64_t tag) = 0;
};

// Discrete-event kernel: events ordered by (time, insertion sequence), so events at equal times run
// in the order they were scheduled and every run is deterministic.
class Engine {
  public:
    void schedule_at(Time when, EventHandler& handler, std::uint64_t tag);
    // Throws TimeOverflow when now + delay passes kMaxTime.
    void schedule_after(Time delay, EventHandler& handler, std::uint64_t tag);
    // Runs until no event is left; returns the time of the last event.
    Time run();
    Time now() const { return now_; }
    std::uint64_t events_processed() const { return events_processed_; }

  private:
    struct Event {
        Time when;
        std::uint64_t sequence;
        EventHandler* handler;
        std::uint64_t tag;
    };
    struct Later {
        bool operator()(const Event& a, const Event& b) const {
            if (a.when != b.when) return a.when > b.when;
            return a.sequence > b.sequence;
        }
    };
    std::priority_queue<Event, std::vector<Event>, Later> queue_;
    Time now_ = 0;
    std::uint64_t next_sequence_ = 0;
    std::uint64_t events_processed_ = 0;
};

}  // namespace podsim::core
