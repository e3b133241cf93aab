#include <doctest/doctest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "report/format.hpp"
#include "support.hpp"

// Golden reports of every example config. Numbers are rounded to 6 significant digits so that a
// different compiler's last-bit differences do not matter, while any modelling change does.
// Update mode: PODSIM_UPDATE_GOLDEN=1 (or `make golden`) rewrites tests/golden/*.json.

using namespace podsim;

TEST_CASE("golden reports of the example configs") {
    const bool update = std::getenv("PODSIM_UPDATE_GOLDEN") != nullptr;
    namespace fs = std::filesystem;
    std::vector<fs::path> configs;
    for (const auto& e : fs::directory_iterator(test::source_path("configs"))) {
        if (e.path().extension() == ".yaml") configs.push_back(e.path());
    }
    std::sort(configs.begin(), configs.end());
    REQUIRE(configs.size() >= 10);
    for (const auto& config : configs) {
        CAPTURE(config.string());
        auto sim = run::simulate(config::load_run_file(config.string()));
        auto actual = nlohmann::json::parse(report::format_json(sim.report));
        test::round_to_6_digits(actual);
        fs::path golden = test::source_path("tests/golden/" + config.stem().string() + ".json");
        if (update) {
            std::ofstream(golden) << actual.dump(2) << "\n";
            continue;
        }
        std::ifstream in(golden);
        if (!in) {
            FAIL("missing golden file " << golden.string() << ": run `make golden`");
            continue;
        }
        std::stringstream text;
        text << in.rdbuf();
        auto expected = nlohmann::json::parse(text.str());
        if (expected != actual) {
            auto patch = nlohmann::json::diff(expected, actual);
            FAIL_CHECK("report changed (review, then `make golden`): " << patch.dump());
        }
    }
}
