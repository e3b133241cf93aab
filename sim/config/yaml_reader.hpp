#pragma once

// Internal to the config module: typed, error-collecting access to yaml-cpp nodes.

#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/schema.hpp"
#include "core/diagnostics.hpp"
#include "core/key.hpp"
#include "core/quantity.hpp"

namespace podsim::config::detail {

core::SourceLocation location_of(const YAML::Node& node, const std::string& file);

// Parses a whole file; on failure records a diagnostic (with the parser's position) and returns a
// null node. Never throws.
YAML::Node load_yaml_file(const std::string& path, core::Diagnostics& diagnostics);
YAML::Node load_yaml_string(const std::string& text, const std::string& name, core::Diagnostics& diagnostics);

// A mapping being read: every access records mistakes instead of throwing, and unknown keys are
// reported (with a suggestion) against the schema's keys under `prefix`.
class MapReader {
  public:
    MapReader(YAML::Node node, std::string file, std::string path, core::Diagnostics& diagnostics,
              const std::vector<std::string>& allowed_keys);

    bool ok() const { return ok_; }
    bool has(const std::string& key) const;
    YAML::Node raw(const std::string& key) const;
    std::string path_of(const std::string& key) const;
    core::SourceLocation location(const std::string& key) const;
    core::SourceLocation location() const { return location_of(node_, file_); }
    const std::string& file() const { return file_; }
    core::Diagnostics& diagnostics() const { return diagnostics_; }
    void error(const std::string& key, const std::string& message) const;

    std::optional<long long> integer(const std::string& key, bool required, long long minimum = 1) const;
    std::optional<double> number(const std::string& key, bool required) const;
    std::optional<double> quantity(const std::string& key, core::Dimension dimension, bool required) const;
    std::optional<bool> boolean(const std::string& key) const;
    std::optional<std::string> string(const std::string& key, bool required) const;
    // Index into `choices`, with a suggestion when the value is close to one of them.
    std::optional<std::size_t> choice(const std::string& key, const std::vector<std::string>& choices,
                                      bool required) const;

    // Reads a declared key by its name, as its declaration says: "missing required key" when it is
    // required (or `required` says so), its default when it is absent and has one, and an error
    // naming the bounds when the value is outside them. nullopt when absent without a default, or
    // wrong (the mistake is recorded).
    std::optional<long long> integer(const core::Key& key, std::optional<bool> required = {}) const;
    std::optional<double> number(const core::Key& key, std::optional<bool> required = {}) const;
    std::optional<double> quantity(const core::Key& key, std::optional<bool> required = {}) const;
    std::optional<bool> boolean(const core::Key& key) const;
    std::optional<std::string> string(const core::Key& key, std::optional<bool> required = {}) const;
    std::optional<std::size_t> choice(const core::Key& key, std::optional<bool> required = {}) const;
    // Records the bounds error of `value` against `key`'s bounds, at `name` (default: the key's own
    // name); false when there is one.
    bool check_bounds(const core::Key& key, double value, std::string_view name = {}) const;

  private:
    // The value under `key`, or nullptr.
    const YAML::Node* find(const std::string& key) const;

    YAML::Node node_;
    // The mapping's entries, read once: a yaml-cpp lookup converts every key it passes, and a run
    // config is read key by key (a fifth of a GPT-2 sweep went into such lookups).
    std::vector<std::pair<std::string, YAML::Node>> entries_;
    std::string file_;
    std::string path_;
    core::Diagnostics& diagnostics_;
    bool ok_ = false;
};

// Reads a scalar as a quantity (or a {value, source} mapping), reporting against `path`.
std::optional<double> read_quantity(const YAML::Node& node, const std::string& file, const std::string& path,
                                    core::Dimension dimension, core::Diagnostics& diagnostics);
std::optional<long long> read_integer(const YAML::Node& node, const std::string& file,
                                      const std::string& path, long long minimum,
                                      core::Diagnostics& diagnostics);

}  // namespace podsim::config::detail
