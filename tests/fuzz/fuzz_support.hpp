#pragma once

// Shared by the libFuzzer targets of this folder. A target feeds one input to one of podsim's
// public loaders or readers; a core::UserError (a clear message for the user) is the expected way
// to reject bad input, so it is caught. Any other exception, a crash, a sanitizer report, a run
// over the time limit or over the memory limit is a finding.

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>

#include "config/load.hpp"
#include "core/diagnostics.hpp"

namespace podsim::fuzz {

// A private directory for the files a loader needs a path for; made once per process and removed
// when it exits.
inline const std::filesystem::path& scratch_dir() {
    struct Scratch {
        std::filesystem::path dir;
        Scratch() {
            std::string pattern = (std::filesystem::temp_directory_path() / "podsim-fuzz-XXXXXX").string();
            if (!::mkdtemp(pattern.data())) std::abort();
            dir = pattern;
        }
        Scratch(const Scratch&) = delete;
        Scratch& operator=(const Scratch&) = delete;
        ~Scratch() {
            std::error_code ignored;
            std::filesystem::remove_all(dir, ignored);
        }
    };
    static const Scratch scratch;
    return scratch.dir;
}

// Writes `size` bytes to `name` in the scratch directory and returns its path.
inline std::string write_input(const std::string& name, const std::uint8_t* data, std::size_t size) {
    const auto path = scratch_dir() / name;
    std::filesystem::create_directories(path.parent_path());
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
    if (!out) std::abort();
    return path.string();
}

// Bare names (`model: gpt2-small`) resolve against the source tree's models/ and topologies/.
inline void use_source_tree() {
    ::setenv("PODSIM_HOME", PODSIM_SOURCE_DIR, 1);
}

// A run config from the fuzzer's bytes, as `podsim run` loads a file (relative paths resolve in
// the scratch directory).
inline config::RunSpec load_run(const std::string& text) {
    return config::load_run_text(text, (scratch_dir() / "run.yaml").string(), scratch_dir());
}

// Runs `body`, accepting a rejection with a user-facing message (which must say something).
template <typename Body>
void expect_result_or_user_error(Body&& body) {
    try {
        body();
    } catch (const core::UserError& e) {
        if (e.diagnostics().empty()) std::abort();
    }
}

}  // namespace podsim::fuzz
