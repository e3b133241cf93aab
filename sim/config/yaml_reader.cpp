#include "config/yaml_reader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <unordered_set>

#include <fmt/format.h>

#include "core/bounded_file.hpp"
#include "core/suggest.hpp"

namespace podsim::config::detail {
namespace {

using core::kMaxConfigBytes;

std::string kind_of(const YAML::Node& node) {
    switch (node.Type()) {
        case YAML::NodeType::Map:
            return "a mapping";
        case YAML::NodeType::Sequence:
            return "a list";
        case YAML::NodeType::Scalar:
            return fmt::format("'{}'", node.Scalar());
        case YAML::NodeType::Null:
            return "nothing";
        default:
            return "an undefined value";
    }
}

std::string join_path(const std::string& path, const std::string& key) {
    return path.empty() ? key : path + "." + key;
}

}  // namespace

core::SourceLocation location_of(const YAML::Node& node, const std::string& file) {
    core::SourceLocation loc{file, 0, 0};
    if (node.IsDefined()) {
        YAML::Mark mark = node.Mark();
        if (mark.line >= 0) {
            loc.line = mark.line + 1;
            loc.column = mark.column + 1;
        }
    }
    return loc;
}

YAML::Node load_yaml_string(const std::string& text, const std::string& name,
                            core::Diagnostics& diagnostics) {
    try {
        return YAML::Load(text);
    } catch (const YAML::Exception& e) {
        core::SourceLocation loc{name, e.mark.line >= 0 ? e.mark.line + 1 : 0,
                                 e.mark.column >= 0 ? e.mark.column + 1 : 0};
        // yaml-cpp reports a tab in the indentation as whatever it makes of the line ("illegal map
        // value"); the actual mistake is the tab, on this line or one above.
        int line = 1;
        std::size_t start = 0;
        while (start < text.size() && (loc.line == 0 || line <= loc.line)) {
            std::size_t indent = start;
            while (indent < text.size() && (text[indent] == ' ' || text[indent] == '\t')) {
                if (text[indent] == '\t') {
                    diagnostics.error({name, line, static_cast<int>(indent - start) + 1}, "",
                                      "a tab in the indentation: YAML indents with spaces only");
                    return YAML::Node();
                }
                ++indent;
            }
            const std::size_t end = text.find('\n', start);
            if (end == std::string::npos) break;
            start = end + 1;
            ++line;
        }
        diagnostics.error(loc, "", "malformed YAML: " + e.msg);
    } catch (const std::exception& e) {
        diagnostics.error({name, 0, 0}, "", std::string("cannot read YAML: ") + e.what());
    }
    return YAML::Node();
}

YAML::Node load_yaml_file(const std::string& path, core::Diagnostics& diagnostics) {
    core::FileBytes file = core::read_regular_file(path, kMaxConfigBytes);
    if (!file.error.empty()) {
        diagnostics.error({path, 0, 0}, "", file.error);
        return YAML::Node();
    }
    const std::string& text = file.bytes;
    if (text.find('\0') != std::string::npos) {
        diagnostics.error({path, 0, 0}, "", "binary data (a NUL byte), not a YAML file");
        return YAML::Node();
    }
    return load_yaml_string(text, path, diagnostics);
}

MapReader::MapReader(YAML::Node node, std::string file, std::string path, core::Diagnostics& diagnostics,
                     const std::vector<std::string>& allowed_keys)
    : node_(std::move(node)), file_(std::move(file)), path_(std::move(path)), diagnostics_(diagnostics) {
    if (!node_.IsMap()) {
        diagnostics_.error(location_of(node_, file_), path_,
                           fmt::format("expected a mapping, found {}", kind_of(node_)));
        return;
    }
    ok_ = true;
    // Duplicates are looked up in a set once a mapping is large: a linear search made 100,000 keys
    // take 11 s. A config's mappings hold a few keys, for which the set costs more than it saves.
    constexpr std::size_t kLinearKeys = 32;
    std::unordered_set<std::string> seen;
    std::string known_keys;  // the hint for a key with no close match, made once
    entries_.reserve(node_.size());
    // Each dereference of a yaml-cpp iterator builds three nodes: one per key, and `end()` once.
    for (const auto& item : node_) {
        const YAML::Node& key = item.first;
        if (!key.IsScalar()) {
            diagnostics_.error(location_of(key, file_), path_, "keys must be plain names");
            continue;
        }
        const std::string& name = key.Scalar();
        bool repeated = false;
        if (entries_.size() < kLinearKeys) {
            for (const auto& entry : entries_) repeated = repeated || entry.first == name;
        } else {
            if (seen.empty())
                for (const auto& entry : entries_) seen.insert(entry.first);
            repeated = !seen.insert(name).second;
        }
        if (repeated) {
            diagnostics_.error(location_of(key, file_), join_path(path_, name),
                               "key given twice (YAML keeps only one of them)");
            continue;
        }
        entries_.emplace_back(name, item.second);
        if (std::find(allowed_keys.begin(), allowed_keys.end(), name) != allowed_keys.end()) continue;
        std::string message = fmt::format("unknown key '{}'", name);
        if (auto hint = core::closest_match(name, allowed_keys)) {
            message += fmt::format(" (did you mean '{}'?)", *hint);
        } else if (!allowed_keys.empty()) {
            if (known_keys.empty())
                known_keys = fmt::format(" (known keys: {})", fmt::join(allowed_keys, ", "));
            message += known_keys;
        }
        diagnostics_.error(location_of(key, file_), join_path(path_, name), message);
    }
}

const YAML::Node* MapReader::find(const std::string& key) const {
    if (ok_)
        for (const auto& [name, value] : entries_)
            if (name == key) return &value;
    return nullptr;
}

bool MapReader::has(const std::string& key) const {
    const YAML::Node* value = find(key);
    return value != nullptr && value->IsDefined() && !value->IsNull();
}

YAML::Node MapReader::raw(const std::string& key) const {
    const YAML::Node* value = find(key);
    return value != nullptr && value->IsDefined() ? *value : YAML::Node();
}

std::string MapReader::path_of(const std::string& key) const {
    return join_path(path_, key);
}

core::SourceLocation MapReader::location(const std::string& key) const {
    if (const YAML::Node* value = find(key); value != nullptr && value->IsDefined())
        return location_of(*value, file_);
    return location_of(node_, file_);
}

void MapReader::error(const std::string& key, const std::string& message) const {
    diagnostics_.error(location(key), path_of(key), message);
}

std::optional<long long> read_integer(const YAML::Node& node, const std::string& file,
                                      const std::string& path, long long minimum,
                                      core::Diagnostics& diagnostics) {
    if (!node.IsScalar()) {
        diagnostics.error(location_of(node, file), path,
                          fmt::format("expected a whole number, found {}", kind_of(node)));
        return std::nullopt;
    }
    const std::string& s = node.Scalar();
    long long value = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec == std::errc::result_out_of_range) {
        diagnostics.error(location_of(node, file), path,
                          fmt::format("'{}' is too {}", s, s.starts_with('-') ? "small" : "large"));
        return std::nullopt;
    }
    if (ec != std::errc() || ptr != s.data() + s.size()) {
        diagnostics.error(location_of(node, file), path,
                          fmt::format("expected a whole number, found '{}'", s));
        return std::nullopt;
    }
    if (value < minimum) {
        diagnostics.error(location_of(node, file), path,
                          minimum == 1 ? fmt::format("must be positive, found {}", value)
                                       : fmt::format("must be at least {}, found {}", minimum, value));
        return std::nullopt;
    }
    return value;
}

std::optional<long long> MapReader::integer(const std::string& key, bool required, long long minimum) const {
    if (!has(key)) {
        if (required && ok_) error(key, "missing required key");
        return std::nullopt;
    }
    YAML::Node value = raw(key);
    if (value.IsMap()) {
        const YAML::Node& with_source = value;
        if (with_source["value"].IsDefined()) value = with_source["value"];
    }
    return read_integer(value, file_, path_of(key), minimum, diagnostics_);
}

std::optional<double> MapReader::number(const std::string& key, bool required) const {
    if (!has(key)) {
        if (required && ok_) error(key, "missing required key");
        return std::nullopt;
    }
    YAML::Node value = raw(key);
    if (!value.IsScalar()) {
        error(key, fmt::format("expected a number, found {}", kind_of(value)));
        return std::nullopt;
    }
    const std::string& s = value.Scalar();
    double d = 0.0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), d);
    if (ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(d)) {
        error(key, fmt::format("expected a number, found '{}'", s));
        return std::nullopt;
    }
    return d;
}

std::optional<double> read_quantity(const YAML::Node& node, const std::string& file, const std::string& path,
                                    core::Dimension dimension, core::Diagnostics& diagnostics) {
    YAML::Node value = node;
    if (node.IsMap()) {
        MapReader with_source(node, file, path, diagnostics, {"value", "source", "notes"});
        if (!with_source.has("value")) {
            with_source.error("value", "missing required key");
            return std::nullopt;
        }
        const YAML::Node& map = node;
        value = map["value"];
    }
    if (!value.IsScalar()) {
        diagnostics.error(location_of(value, file), path,
                          fmt::format("expected a {} such as '{}', found {}", core::dimension_name(dimension),
                                      core::dimension_example(dimension), kind_of(value)));
        return std::nullopt;
    }
    core::QuantityParse q = core::parse_quantity(value.Scalar(), dimension);
    if (!q.ok) {
        diagnostics.error(location_of(value, file), path, q.error);
        return std::nullopt;
    }
    if (q.value < 0) {
        diagnostics.error(location_of(value, file), path,
                          fmt::format("must not be negative, found '{}'", value.Scalar()));
        return std::nullopt;
    }
    return q.value;
}

std::optional<double> MapReader::quantity(const std::string& key, core::Dimension dimension,
                                          bool required) const {
    if (!has(key)) {
        if (required && ok_) error(key, "missing required key");
        return std::nullopt;
    }
    return read_quantity(raw(key), file_, path_of(key), dimension, diagnostics_);
}

std::optional<bool> MapReader::boolean(const std::string& key) const {
    if (!has(key)) return std::nullopt;
    YAML::Node value = raw(key);
    if (value.IsScalar()) {
        const std::string& s = value.Scalar();
        if (s == "true" || s == "True" || s == "yes") return true;
        if (s == "false" || s == "False" || s == "no") return false;
    }
    error(key, fmt::format("expected true or false, found {}", kind_of(value)));
    return std::nullopt;
}

std::optional<std::string> MapReader::string(const std::string& key, bool required) const {
    if (!has(key)) {
        if (required && ok_) error(key, "missing required key");
        return std::nullopt;
    }
    YAML::Node value = raw(key);
    if (!value.IsScalar()) {
        error(key, fmt::format("expected text, found {}", kind_of(value)));
        return std::nullopt;
    }
    return value.Scalar();
}

std::optional<std::size_t> MapReader::choice(const std::string& key, const std::vector<std::string>& choices,
                                             bool required) const {
    auto value = string(key, required);
    if (!value) return std::nullopt;
    for (std::size_t i = 0; i < choices.size(); ++i) {
        if (choices[i] == *value) return i;
    }
    std::string list;
    for (const auto& c : choices) list += (list.empty() ? "" : ", ") + c;
    std::string message = fmt::format("'{}' is not one of {}", *value, list);
    if (auto hint = core::closest_match(*value, choices))
        message += fmt::format(" (did you mean '{}'?)", *hint);
    error(key, message);
    return std::nullopt;
}

bool MapReader::check_bounds(const core::Key& key, double value, std::string_view name) const {
    std::string why = key.bounds_error(value);
    if (why.empty()) return true;
    error(std::string(name.empty() ? key.name() : name), why);
    return false;
}

std::optional<long long> MapReader::integer(const core::Key& key, std::optional<bool> required) const {
    const std::string name(key.name());
    if (!has(name) && key.has_default()) return key.integer_default();
    // Read as 64-bit with no lower limit here: the declared bounds give the message.
    auto value = integer(name, required.value_or(key.required), std::numeric_limits<long long>::min());
    if (value) {
        if (std::string why = key.bounds_error(*value); !why.empty()) {
            error(name, why);
            return std::nullopt;
        }
    }
    return value;
}

std::optional<double> MapReader::number(const core::Key& key, std::optional<bool> required) const {
    const std::string name(key.name());
    if (!has(name) && key.has_default()) return key.default_value;
    auto value = number(name, required.value_or(key.required));
    if (value && !check_bounds(key, *value)) return std::nullopt;
    return value;
}

std::optional<double> MapReader::quantity(const core::Key& key, std::optional<bool> required) const {
    const std::string name(key.name());
    if (!has(name) && key.has_default()) return key.default_value;
    auto value = quantity(name, key.dimension, required.value_or(key.required));
    if (value && !check_bounds(key, *value)) return std::nullopt;
    return value;
}

std::optional<bool> MapReader::boolean(const core::Key& key) const {
    const std::string name(key.name());
    if (!has(name) && key.has_default()) return key.boolean_default();
    return boolean(name);
}

std::optional<std::string> MapReader::string(const core::Key& key, std::optional<bool> required) const {
    const std::string name(key.name());
    if (!has(name) && key.has_default() && !key.default_string.empty())
        return std::string(key.default_string);
    return string(name, required.value_or(key.required));
}

std::optional<std::size_t> MapReader::choice(const core::Key& key, std::optional<bool> required) const {
    const std::string name(key.name());
    if (!has(name) && key.has_default()) return key.choice_default_index();
    return choice(name, std::vector<std::string>(key.choices.begin(), key.choices.end()),
                  required.value_or(key.required));
}

}  // namespace podsim::config::detail
