#include "core/diagnostics.hpp"

#include <algorithm>
#include <tuple>

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

void Diagnostics::sort_by_location() {
    std::stable_sort(items_.begin(), items_.end(), [](const Diagnostic& a, const Diagnostic& b) {
        return std::tie(a.location.file, a.location.line, a.location.column) <
               std::tie(b.location.file, b.location.line, b.location.column);
    });
}

// Reported in file order, so that a person can fix them top to bottom.
UserError::UserError(Diagnostics diagnostics)
    : std::runtime_error(""), diagnostics_((diagnostics.sort_by_location(), std::move(diagnostics))) {
    message_ = diagnostics_.to_string();
}

const char* UserError::what() const noexcept {
    return message_.c_str();
}

void throw_if_errors(const Diagnostics& diagnostics) {
    if (!diagnostics.empty()) throw UserError(diagnostics);
}

}  // namespace podsim::core
