#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "support.hpp"
#include "training_run/whole_run.hpp"
#include "training_run/whole_run_format.hpp"

// Golden whole-run summaries (podsim.whole-run/v1) of every example config with a whole_run:
// block, in tests/golden/whole-run/. Numbers rounded to 6 significant digits as in golden_test.cpp;
// PODSIM_UPDATE_GOLDEN=1 (`make golden`) rewrites them.

using namespace podsim;

TEST_CASE("golden whole-run summaries of the example configs") {
    const bool update = std::getenv("PODSIM_UPDATE_GOLDEN") != nullptr;
    namespace fs = std::filesystem;
    std::vector<fs::path> configs;
    for (const auto& e : fs::directory_iterator(test::source_path("configs"))) {
        if (e.path().extension() == ".yaml") configs.push_back(e.path());
    }
    std::sort(configs.begin(), configs.end());
    int whole_runs = 0;
    for (const auto& config : configs) {
        auto spec = config::load_run_file(config.string());
        if (!spec.whole_run) continue;
        ++whole_runs;
        CAPTURE(config.string());
        auto actual = nlohmann::json::parse(
            training_run::whole_run_json(training_run::simulate_whole_run(spec, *spec.whole_run)));
        // Long lists (programs, PT_XLA_DEBUG lines) as their length, first and last entries.
        for (auto& [key, value] : actual.items()) {
            if (value.is_array() && value.size() > 6)
                value = {{"count", value.size()}, {"first", value.front()}, {"last", value.back()}};
        }
        test::round_to_6_digits(actual);
        fs::path golden = test::source_path("tests/golden/whole-run/" + config.stem().string() + ".json");
        if (update) {
            fs::create_directories(golden.parent_path());
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
            FAIL_CHECK("whole-run summary changed (review, then `make golden`): " << patch.dump());
        }
    }
    CHECK(whole_runs >= 4);
}
