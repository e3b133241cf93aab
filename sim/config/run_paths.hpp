#pragma once

// Internal to the config module: dotted paths into a run config tree, as sweep axes and `--set`
// name them (e.g. training.global_batch, mesh.ici.fsdp).

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

namespace podsim::config::detail {

// Why `dotted` names no key of a run config (with a "did you mean"), or nothing when it does.
std::optional<std::string> run_path_error(const std::string& dotted);

// Sets the value at `dotted` in a run config tree, creating mappings on the way. Setting mesh.ici
// or mesh.dcn on a shorthand mesh turns it into the long form; setting one of global_batch and
// per_chip_batch drops the other. The tree gets a copy of `value`, or with `share_value` the value
// itself (for a tree that nothing writes into below that key: a copy's nodes live as long as the
// tree does).
void set_path(YAML::Node root, const std::string& dotted, const YAML::Node& value, bool share_value = false);

// A key inside a model or topology the config names (model.layers=48 on `model: gpt2-2b`): for
// each of `paths` below `model.` or `topology.` where that section is a name, the named file's
// keys are written in place of the name, so that the key is set among them. A name that finds no
// file is left for the config's reading to report.
// Returns the sections it wrote, each with the file it read.
std::vector<std::pair<std::string, std::string>> inline_named_sections(YAML::Node run,
                                                                       const std::vector<std::string>& paths,
                                                                       const std::filesystem::path& base_dir);

// One write of set_paths: a dotted path and its value.
struct PathWrite {
    const std::string* path;
    const YAML::Node* value;
};

// set_path for each of `writes`, a whole model or topology first: a key inside one
// (model.num_experts) is then set among the keys of the one named (model: llama3-8b), whichever
// of the two is written first. Returns what inline_named_sections inlined.
std::vector<std::pair<std::string, std::string>> set_paths(YAML::Node root,
                                                           const std::vector<PathWrite>& writes,
                                                           const std::filesystem::path& base_dir);

}  // namespace podsim::config::detail
