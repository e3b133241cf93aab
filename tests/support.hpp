#pragma once

#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <system_error>
#include <vector>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "config/load.hpp"
#include "run/simulate.hpp"

namespace podsim::test {

inline std::string source_path(const std::string& relative) {
    return std::string(PODSIM_SOURCE_DIR) + "/" + relative;
}

inline std::string read_text(const std::filesystem::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// The directories fresh_dir hands out, removed when the test process ends (so that test runs do not
// fill the temporary directory).
struct TemporaryDirs {
    std::vector<std::filesystem::path> dirs;
    TemporaryDirs() = default;
    TemporaryDirs(const TemporaryDirs&) = delete;
    TemporaryDirs& operator=(const TemporaryDirs&) = delete;
    ~TemporaryDirs() {
        std::error_code ignored;
        for (const auto& dir : dirs) std::filesystem::remove_all(dir, ignored);
    }
};

// An empty temporary directory of this test process, by name.
inline std::filesystem::path fresh_dir(const std::string& name) {
    static TemporaryDirs made;
    auto dir = std::filesystem::temp_directory_path() / fmt::format("podsim-test-{}-{}", name, ::getpid());
    std::filesystem::remove_all(dir);
    made.dirs.push_back(dir);
    return dir;
}

// Goldens keep 6 significant digits, so that a different compiler's last-bit differences do not
// matter while any modelling change does.
inline void round_to_6_digits(nlohmann::json& j) {
    if (j.is_number_float()) {
        double v = j.get<double>();
        j = v == 0.0 ? 0.0 : std::stod(fmt::format("{:.6g}", v));
    } else if (j.is_object() || j.is_array()) {
        for (auto& item : j) round_to_6_digits(item);
    }
}

inline run::RunSpec load_config(const std::string& relative) {
    return config::load_run_file(source_path(relative));
}

inline run::Simulation simulate_config(const std::string& relative) {
    return run::simulate(load_config(relative));
}

// A run config from YAML text; bare model/topology names resolve in the source tree.
inline run::RunSpec run_from_text(const std::string& yaml) {
    return config::load_run_text(yaml, "<test>", source_path("configs"));
}

}  // namespace podsim::test
