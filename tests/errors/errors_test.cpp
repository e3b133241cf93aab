#include <doctest/doctest.h>

#include <sys/wait.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include <fmt/format.h>
#include <unistd.h>

#include "config/load.hpp"
#include "core/diagnostics.hpp"
#include "support.hpp"

// Every file in tests/errors/cases/ is a bad input. Its `# expect: TEXT` lines each name text that
// one of the reported errors must contain, and `# expect-errors: N` how many errors there are where
// that is checked; every error must be `FILE:LINE:COL: error: ...`.

using namespace podsim;
namespace fs = std::filesystem;

namespace {

std::string read(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

std::vector<std::string> expectations(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        if (line.rfind("# expect: ", 0) == 0) out.push_back(line.substr(10));
    }
    return out;
}

std::vector<fs::path> files_in(const std::string& dir) {
    std::vector<fs::path> out;
    for (const auto& e : fs::directory_iterator(test::source_path(dir))) {
        if (e.path().extension() == ".yaml") out.push_back(e.path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

// Loading must either succeed or report user errors; anything else (another exception, a crash)
// fails the test.
enum class Kind { run, model, topology };
bool loads_or_reports(const std::string& text, Kind kind) {
    fs::path tmp = fs::temp_directory_path() / fmt::format("podsim-fuzz-{}.yaml", ::getpid());
    std::ofstream(tmp, std::ios::binary) << text;
    try {
        switch (kind) {
            case Kind::run:
                config::load_run_file(tmp.string());
                break;
            case Kind::model:
                config::load_model_file(tmp.string());
                break;
            case Kind::topology:
                config::load_topology_file(tmp.string());
                break;
        }
    } catch (const core::UserError& e) {
        fs::remove(tmp);
        return !e.diagnostics().empty();
    } catch (...) {
        fs::remove(tmp);
        return false;
    }
    fs::remove(tmp);
    return true;
}

}  // namespace

TEST_CASE("each bad input reports its error with FILE:LINE:COL") {
    const std::regex format(R"(^[^:]+:\d+:\d+: error: .+)");
    auto cases = files_in("tests/errors/cases");
    REQUIRE(cases.size() >= 15);
    for (const auto& file : cases) {
        CAPTURE(file.filename().string());
        auto expected = expectations(read(file));
        REQUIRE_FALSE(expected.empty());
        std::string reported;
        std::size_t errors = 0;
        try {
            config::load_run_file(file.string());
            FAIL("loaded without error");
        } catch (const core::UserError& e) {
            reported = e.diagnostics().to_string();
            errors = e.diagnostics().items().size();
            for (const auto& d : e.diagnostics().items()) {
                CAPTURE(d.to_string());
                CHECK(std::regex_match(d.to_string(), format));
                CHECK(d.location.file == file.string());
            }
        }
        for (const auto& text : expected) {
            CAPTURE(reported);
            CHECK_MESSAGE(reported.find(text) != std::string::npos, "expected: " << text);
        }
        // `# expect-errors: N`: exactly N errors, where one mistake must not bring others in its wake.
        const std::string text = read(file);
        if (auto at = text.find("# expect-errors: "); at != std::string::npos) {
            CAPTURE(reported);
            CHECK(errors == std::stoul(text.substr(at + 17)));
        }
    }
}

TEST_CASE("truncated and corrupted inputs never crash the loader") {
    std::mt19937 random(12345);  // fixed seed: the same inputs every run
    std::vector<std::pair<fs::path, Kind>> inputs;
    for (const auto& f : files_in("configs")) inputs.push_back({f, Kind::run});
    for (const auto& f : files_in("models")) inputs.push_back({f, Kind::model});
    for (const auto& f : files_in("topologies")) inputs.push_back({f, Kind::topology});
    for (const auto& input : inputs) {
        const fs::path& file = input.first;  // not a structured binding: clang 14 cannot capture those
        const Kind kind = input.second;
        CAPTURE(file.string());
        std::string text = read(file);
        // Truncations at 16 points.
        for (int i = 1; i <= 16; ++i) {
            std::size_t cut = text.size() * static_cast<std::size_t>(i) / 17;
            CHECK(loads_or_reports(text.substr(0, cut), kind));
        }
        // Byte corruptions: YAML punctuation, digits, letters, control bytes.
        const std::string alphabet = "{}[]:,-#&*!|>'\"%@` \t\n0123456789xyzGiB/s\x01\x7f\xff";
        for (int i = 0; i < 24; ++i) {
            std::string mutated = text;
            for (int k = 0; k < 3; ++k) {
                mutated[random() % mutated.size()] = alphabet[random() % alphabet.size()];
            }
            CHECK(loads_or_reports(mutated, kind));
        }
    }
    // Pure garbage, empty files, deep nesting.
    std::string garbage;
    for (int i = 0; i < 4096; ++i) garbage += static_cast<char>(random() % 256);
    CHECK(loads_or_reports(garbage, Kind::run));
    CHECK(loads_or_reports("", Kind::run));
    CHECK(loads_or_reports(std::string(5000, '['), Kind::run));
    CHECK(loads_or_reports("schema: podsim.run/v1\nmodel: " + std::string(3000, '{'), Kind::run));
}

TEST_CASE("the command line exits with code 2 on bad input and lists every error") {
    std::string bad = test::source_path("tests/errors/cases/all_errors_at_once.yaml");
    std::string command = std::string(PODSIM_BINARY) + " check " + bad + " > /dev/null 2>&1";
    int status = std::system(command.c_str());
    REQUIRE(WIFEXITED(status));
    CHECK(WEXITSTATUS(status) == 2);
    std::string good =
        std::string(PODSIM_BINARY) + " check " + test::source_path("configs/default.yaml") + " > /dev/null";
    CHECK(WEXITSTATUS(std::system(good.c_str())) == 0);
    // Sweep files are checked as sweeps, bad ones with their errors.
    std::string sweep = std::string(PODSIM_BINARY) + " check " +
                        test::source_path("configs/sweeps/gpt3-175b-v4.yaml") + " > /dev/null";
    CHECK(WEXITSTATUS(std::system(sweep.c_str())) == 0);
    std::string bad_sweep = std::string(PODSIM_BINARY) + " check " +
                            test::source_path("tests/data/sweeps/bad.yaml") + " > /dev/null 2>&1";
    CHECK(WEXITSTATUS(std::system(bad_sweep.c_str())) == 2);
    std::string unknown = std::string(PODSIM_BINARY) + " run --format yaml > /dev/null 2>&1";
    CHECK(WEXITSTATUS(std::system(unknown.c_str())) == 2);
}
