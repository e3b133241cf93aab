#include <doctest/doctest.h>

#include <vector>

#include "core/engine.hpp"
#include "core/quantity.hpp"
#include "core/suggest.hpp"

using namespace podsim::core;

TEST_CASE("quantities parse to SI base units") {
    CHECK(parse_quantity("275 TFLOP/s", Dimension::flop_rate).value == doctest::Approx(275e12));
    CHECK(parse_quantity("32 GiB", Dimension::bytes).value == 32.0 * 1024 * 1024 * 1024);  // 34359738368
    CHECK(parse_quantity("1.2 TB/s", Dimension::bandwidth).value == doctest::Approx(1.2e12));
    CHECK(parse_quantity("45 GB/s", Dimension::bandwidth).value == doctest::Approx(45e9));
    CHECK(parse_quantity("200 Gb/s", Dimension::bandwidth).value == doctest::Approx(25e9));  // bits / 8
    CHECK(parse_quantity("1 us", Dimension::time).value == doctest::Approx(1e-6));
    CHECK(parse_quantity("3ms", Dimension::time).value == doctest::Approx(3e-3));
    CHECK(parse_quantity("1050 MHz", Dimension::frequency).value == doctest::Approx(1.05e9));
}

TEST_CASE("quantities without a unit or with the wrong one are rejected with a reason") {
    auto bare = parse_quantity("45", Dimension::bandwidth);
    CHECK_FALSE(bare.ok);
    CHECK(bare.error.find("no unit") != std::string::npos);
    auto wrong = parse_quantity("32 GiB", Dimension::bandwidth);
    CHECK_FALSE(wrong.ok);
    CHECK(wrong.error.find("is a size") != std::string::npos);
    auto unknown = parse_quantity("12 furlongs", Dimension::time);
    CHECK_FALSE(unknown.ok);
    CHECK(unknown.error.find("unknown unit") != std::string::npos);
    CHECK_FALSE(parse_quantity("fast", Dimension::time).ok);
    CHECK_FALSE(parse_quantity("", Dimension::time).ok);
}

namespace {
struct Recorder final : EventHandler {
    explicit Recorder(Engine& e) : engine(&e) {}
    std::vector<std::pair<Time, std::uint64_t>> seen;
    Engine* engine;
    void on_event(Time now, std::uint64_t tag) override {
        seen.push_back({now, tag});
        if (tag == 99) engine->schedule_after(0, *this, 100);  // same instant, queued last
    }
    std::vector<std::uint64_t> tags() const {
        std::vector<std::uint64_t> out;
        for (const auto& [t, tag] : seen) out.push_back(tag);
        return out;
    }
};

// Three events: tag 1 at t=5, tag 2 at t=3, tag 3 at t=5.
struct ThreeEvents {
    Engine engine;
    Recorder r{engine};
    ThreeEvents() {
        engine.schedule_at(5, r, 1);
        engine.schedule_at(3, r, 2);
        engine.schedule_at(5, r, 3);
    }
};
}  // namespace

TEST_CASE_FIXTURE(ThreeEvents, "engine runs events by time, ties in insertion order") {
    engine.schedule_at(3, r, 99);
    engine.schedule_at(3, r, 4);
    CHECK(engine.run() == 5);
    // t=3: 2, 99, 4 as inserted, then 100 (scheduled at t=3 while running); t=5: 1, 3.
    CHECK(r.tags() == std::vector<std::uint64_t>{2, 99, 4, 100, 1, 3});
    CHECK(engine.events_processed() == 6);
}

TEST_CASE_FIXTURE(ThreeEvents, "engine steps one event at a time, lists what is pending and jumps ahead") {
    auto pending = engine.pending();
    REQUIRE(pending.size() == 3);
    CHECK(pending[0].when == 3);
    CHECK(pending[0].tag == 2);
    CHECK(pending[1].tag == 1);  // equal times: in insertion order
    CHECK(pending[2].tag == 3);
    CHECK(engine.step());
    CHECK(engine.now() == 3);
    // Ten picoseconds later, every pending event retagged: the order stays.
    engine.jump(10, [](const EventHandler&, std::uint64_t tag) { return tag + 100; });
    CHECK(engine.now() == 13);
    CHECK(engine.run() == 15);
    CHECK(r.tags() == std::vector<std::uint64_t>{2, 101, 103});
    CHECK_FALSE(engine.step());
    // A jump past the last representable instant is refused.
    engine.schedule_at(kMaxTime - 5, r, 7);
    CHECK_THROWS_AS(engine.jump(10, [](const EventHandler&, std::uint64_t tag) { return tag; }),
                    TimeOverflow);
}

TEST_CASE("did-you-mean suggestions") {
    CHECK(edit_distance("kitten", "sitting") == 3);
    CHECK(closest_match("global_bacth", {"global_batch", "seq_len"}) ==
          std::optional<std::string>("global_batch"));
    CHECK(closest_match("remt", {"remat", "dtype"}) == std::optional<std::string>("remat"));
    CHECK_FALSE(closest_match("zzzzzz", {"remat", "dtype"}).has_value());
}
