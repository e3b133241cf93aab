#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace podsim::sweep {

// A `keep:` filter: comparisons of report fields with numbers, joined by and / or / not and
// parentheses; a bare field is true when non-zero. `fits`, `mfu > 0.4`, `peak_bytes < 30 GiB and
// step_time_s < 5`. Numbers may carry a size or time unit. An unknown value (NaN) is false and
// fails every comparison.
class Expression {
  public:
    // A field name -> its slot in the values evaluate() takes, or nullopt when there is no such
    // field. Names are resolved once, when parsing: evaluating looks nothing up by name.
    using Resolver = std::function<std::optional<std::size_t>(std::string_view)>;

    // Parses `text`; on a syntax error or an unknown field returns nullopt and sets `error` (with
    // the closest of `names` as a suggestion).
    static std::optional<Expression> parse(const std::string& text, const Resolver& resolve,
                                           const std::vector<std::string>& names, std::string& error);
    // `values` by slot; a slot beyond it is unknown.
    bool evaluate(std::span<const double> values) const;

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
