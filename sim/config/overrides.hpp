#pragma once

#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "config/run_spec.hpp"

namespace podsim::config {

// One change to a run config before it is checked, as `--set training.global_batch=256` gives it:
// a dotted path (the same paths as sweep axes) and a YAML value (256, 2x2x4, {fsdp: 8}, 1 us).
struct Override {
    std::string path;
    std::string value;
    std::string origin;  // how the user wrote it, where its mistakes are reported
};

// Whether a path sets the batch (training.global_batch or training.per_chip_batch, each replacing
// the other when set).
bool sets_batch(std::string_view path);

// "key.path=value"; throws core::UserError (located at `origin_prefix` + the text) without '='.
Override parse_override(const std::string& assignment, const std::string& origin_prefix = "--set ");

// load_run_file / load_run_text of load.hpp with overrides applied to the tree first. Every mistake
// is reported at once: unknown paths (with "did you mean"), and values an override brought in at
// the override rather than in the file.
RunSpec load_run_file(const std::string& path, const std::vector<Override>& overrides);
RunSpec load_run_text(const std::string& yaml_text, const std::string& name,
                      const std::filesystem::path& base_dir, const std::vector<Override>& overrides);

}  // namespace podsim::config
