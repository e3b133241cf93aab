#pragma once

#include <stdexcept>
#include <string>
#include <vector>

namespace podsim::core {

// Where a user-supplied value came from; line and column are 1-based (0 = unknown).
struct SourceLocation {
    std::string file;
    int line = 0;
    int column = 0;
    bool operator==(const SourceLocation&) const = default;
};

// One mistake in user input, printed as `FILE:LINE:COL: error: key.path: message`.
struct Diagnostic {
    SourceLocation location;
    std::string key_path;
    std::string message;

    std::string to_string() const;
};

// Collects every mistake of an input instead of stopping at the first one.
class Diagnostics {
  public:
    void error(SourceLocation location, std::string key_path, std::string message);
    bool empty() const { return items_.empty(); }
    std::size_t size() const { return items_.size(); }
    const std::vector<Diagnostic>& items() const { return items_; }
    void append(const Diagnostics& other);
    std::string to_string() const;
    void sort_by_location();

  private:
    std::vector<Diagnostic> items_;
};

// Thrown by library code when user input is unusable; the CLI prints it and exits with code 2.
class UserError : public std::runtime_error {
  public:
    explicit UserError(Diagnostics diagnostics);
    const Diagnostics& diagnostics() const { return diagnostics_; }
    const char* what() const noexcept override;

  private:
    Diagnostics diagnostics_;
    std::string message_;
};

// Throws UserError when `diagnostics` holds anything.
void throw_if_errors(const Diagnostics& diagnostics);

}  // namespace podsim::core
