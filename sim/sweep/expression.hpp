#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace podsim::sweep {

// A `keep:` filter: comparisons of report fields with numbers, joined by and / or / not and
// parentheses; a bare field is true when non-zero. `fits`, `mfu > 0.4`, `peak_bytes < 30 GiB and
// step_time_s < 5`. Numbers may carry a size or time unit.
class Expression {
  public:
    // Field lookup: the value of a named field, or nullopt when there is no such field.
    using Fields = std::function<std::optional<double>(const std::string&)>;

    // Parses `text`; on a syntax error or an unknown field returns nullopt and sets `error`.
    static std::optional<Expression> parse(const std::string& text,
                                           const std::vector<std::string>& known_fields, std::string& error);
    bool evaluate(const Fields& fields) const;

    struct Node;
    Expression(const Expression&);
    Expression& operator=(const Expression&);
    Expression(Expression&&) noexcept;
    Expression& operator=(Expression&&) noexcept;
    ~Expression();

  private:
    explicit Expression(std::shared_ptr<const Node> root);
    std::shared_ptr<const Node> root_;
};

}  // namespace podsim::sweep
