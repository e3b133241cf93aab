#include <doctest/doctest.h>

#include <iostream>

#include "profile/suite.hpp"
#include "support.hpp"

TEST_CASE("published collective measurements") {
    auto cases =
        podsim::config::load_collective_suite(podsim::test::source_path("tests/validation/collectives"));
    REQUIRE(cases.size() >= 5);
    auto results = podsim::profile::evaluate_collective_suite(cases);
    std::cout << podsim::profile::format_suite(results);
    for (const auto& r : results) {
        CAPTURE(r.id);
        CHECK_MESSAGE(r.status != podsim::profile::CaseStatus::fail,
                      r.id << " misses its tolerance: error " << r.error);
        CHECK_MESSAGE(r.status != podsim::profile::CaseStatus::unexpected_pass,
                      r.id << " now passes: remove its expected_miss");
    }
}
