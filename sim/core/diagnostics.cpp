#include "core/diagnostics.hpp"

#include <fmt/format.h>

namespace podsim::core {

std::string Diagnostic::to_string() const {
    std::string where = location.file.empty() ? std::string("<input>") : location.file;
    if (location.line > 0) where += fmt::format(":{}:{}", location.line, location.column);
    if (key_path.empty()) return fmt::format("{}: error: {}", where, message);
    return fmt::format("{}: error: {}: {}", where, key_path, message);
}

void Diagnostics::error(SourceLocation location, std::string key_path, std::string message) {
    items_.push_back(Diagnostic{std::move(location), std::move(key_path), std::move(message)});
}

void Diagnostics::append(const Diagnostics& other) {
    items_.insert(items_.end(), other.items_.begin(), other.items_.end());
}

std::string Diagnostics::to_string() const {
    std::string out;
    for (const auto& item : items_) {
        out += item.to_string();
        out += '\n';
    }
    return out;
}

UserError::UserError(Diagnostics diagnostics)
    : std::runtime_error(diagnostics.to_string()), diagnostics_(std::move(diagnostics)) {}

void throw_if_errors(const Diagnostics& diagnostics) {
    if (!diagnostics.empty()) throw UserError(diagnostics);
}

}  // namespace podsim::core
