#pragma once

#include <cstdint>
#include <functional>
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
    // Runs the next event; false when none is left.
    bool step();
    Time now() const { return now_; }
    std::uint64_t events_processed() const { return events_processed_; }

    struct Pending {
        Time when;
        const EventHandler* handler;
        std::uint64_t tag;
    };
    // The events still to run, in the order they will run.
    std::vector<Pending> pending() const;
    void pending(std::vector<Pending>& out) const;  // the same into `out`, reusing its storage
    // Moves the clock and every pending event `delta` later and gives each event the tag
    // `retag(handler, tag)`; the order of the events does not change. For a model that knows the
    // next `delta` would only repeat what it has already seen (a periodic steady state).
    // Throws TimeOverflow when an event would pass kMaxTime.
    void jump(Time delta, const std::function<std::uint64_t(const EventHandler&, std::uint64_t)>& retag);

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
    std::vector<Event> queue_;           // a binary heap under Later
    mutable std::vector<Event> sorted_;  // pending()'s scratch
    Time now_ = 0;
    std::uint64_t next_sequence_ = 0;
    std::uint64_t events_processed_ = 0;
};

}  // namespace podsim::core
