#include "sweep/expression.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "core/quantity.hpp"
#include "core/suggest.hpp"

namespace podsim::sweep {

// `and` / `or` nodes hold all their operands (a chain of 10,000 terms is one node, not a tree
// 10,000 deep), so recursion depth is bounded by the parenthesis and `not` nesting, which the
// parser limits.
struct Expression::Node {
    enum Kind { number, field, compare, logical_and, logical_or, logical_not } kind = number;
    double value = 0.0;
    std::size_t slot = 0;  // field: position in the values
    std::string op;
    std::vector<std::shared_ptr<const Node>> operands;
};

namespace {

// Bounds that keep parsing and evaluation cheap and the recursion shallow: a real filter is a
// line or two, nested a few levels.
constexpr std::size_t kMaxExpressionChars = 10'000;
constexpr int kMaxNesting = 64;

using NodePtr = std::shared_ptr<const Expression::Node>;

class Parser {
  public:
    Parser(const std::string& text, const Expression::Resolver& resolve,
           const std::vector<std::string>& names)
        : text_(text), resolve_(resolve), names_(names) {}

    NodePtr parse() {
        if (text_.size() > kMaxExpressionChars) {
            fail(fmt::format("the expression has {} characters; the limit is {}", text_.size(),
                             kMaxExpressionChars));
            return make({});
        }
        NodePtr n = parse_or();
        skip();
        if (pos_ < text_.size()) fail(fmt::format("unexpected '{}'", text_.substr(pos_)));
        return n;
    }
    std::string error;

  private:
    void fail(const std::string& message) {
        if (error.empty()) error = message;
        pos_ = text_.size();
    }
    void skip() {
        while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
    }
    bool word(const char* w) {
        skip();
        std::size_t n = std::char_traits<char>::length(w);
        if (text_.compare(pos_, n, w) != 0) return false;
        std::size_t end = pos_ + n;
        if (end < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[end])) || text_[end] == '_'))
            return false;
        pos_ = end;
        return true;
    }
    bool symbol(const char* s) {
        skip();
        std::size_t n = std::char_traits<char>::length(s);
        if (text_.compare(pos_, n, s) != 0) return false;
        pos_ += n;
        return true;
    }
    NodePtr make(Expression::Node n) { return std::make_shared<const Expression::Node>(std::move(n)); }

    // Enters one level of parentheses or `not`; false (and an error) beyond kMaxNesting.
    bool descend() {
        if (++depth_ <= kMaxNesting) return true;
        fail(fmt::format("nested more than {} levels deep", kMaxNesting));
        return false;
    }

    NodePtr parse_or() {
        NodePtr first = parse_and();
        Expression::Node n;
        n.kind = Expression::Node::logical_or;
        n.operands.push_back(first);
        while (error.empty() && (word("or") || symbol("||"))) n.operands.push_back(parse_and());
        return n.operands.size() == 1 ? first : make(std::move(n));
    }
    NodePtr parse_and() {
        NodePtr first = parse_not();
        Expression::Node n;
        n.kind = Expression::Node::logical_and;
        n.operands.push_back(first);
        while (error.empty() && (word("and") || symbol("&&"))) n.operands.push_back(parse_not());
        return n.operands.size() == 1 ? first : make(std::move(n));
    }
    NodePtr parse_not() {
        int nots = 0;
        while (word("not") || symbol("!")) {
            if (!descend()) return make({});
            ++nots;
        }
        NodePtr inner = parse_compare();
        for (; nots > 0; --nots) {
            Expression::Node n;
            n.kind = Expression::Node::logical_not;
            n.operands.push_back(inner);
            inner = make(std::move(n));
            --depth_;
        }
        return inner;
    }
    NodePtr parse_compare() {
        NodePtr left = parse_atom();
        for (const char* op : {"<=", ">=", "==", "!=", "<", ">"}) {
            if (symbol(op)) {
                Expression::Node n;
                n.kind = Expression::Node::compare;
                n.op = op;
                n.operands = {left, parse_atom()};
                return make(std::move(n));
            }
        }
        return left;
    }
    NodePtr parse_atom() {
        skip();
        if (symbol("(")) {
            if (!descend()) return make({});
            NodePtr inner = parse_or();
            if (!symbol(")")) fail("missing ')'");
            --depth_;
            return inner;
        }
        if (pos_ >= text_.size()) {
            fail("expression ends too early");
            return make({});
        }
        char c = text_[pos_];
        if (std::isdigit(static_cast<unsigned char>(c)) || c == '.' || c == '-') {
            // A number, optionally with a unit up to the next operator or space-separated keyword.
            std::size_t start = pos_;
            double value = 0.0;
            auto [ptr, ec] = std::from_chars(text_.data() + pos_, text_.data() + text_.size(), value);
            if (ec != std::errc()) {
                fail(fmt::format("'{}' is not a number", text_.substr(pos_)));
                return make({});
            }
            pos_ = static_cast<std::size_t>(ptr - text_.data());
            std::size_t unit_start = pos_;
            while (unit_start < text_.size() && text_[unit_start] == ' ') ++unit_start;
            std::size_t unit_end = unit_start;
            while (unit_end < text_.size() &&
                   (std::isalpha(static_cast<unsigned char>(text_[unit_end])) || text_[unit_end] == '/')) {
                ++unit_end;
            }
            std::string unit = text_.substr(unit_start, unit_end - unit_start);
            if (!unit.empty() && unit != "and" && unit != "or" && unit != "not") {
                std::string literal = text_.substr(start, unit_end - start);
                bool parsed = false;
                for (auto dim : {core::Dimension::bytes, core::Dimension::time}) {
                    auto q = core::parse_quantity(literal, dim);
                    if (q.ok) {
                        value = q.value;
                        parsed = true;
                        break;
                    }
                }
                if (!parsed) {
                    fail(fmt::format("'{}' is not a number with a size or time unit", literal));
                    return make({});
                }
                pos_ = unit_end;
            }
            Expression::Node n;
            n.kind = Expression::Node::number;
            n.value = value;
            return make(std::move(n));
        }
        if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
            std::size_t start = pos_;
            while (pos_ < text_.size() && (std::isalnum(static_cast<unsigned char>(text_[pos_])) ||
                                           text_[pos_] == '_' || text_[pos_] == '.')) {
                ++pos_;
            }
            std::string name = text_.substr(start, pos_ - start);
            if (name == "true" || name == "false") {
                Expression::Node n;
                n.value = name == "true" ? 1.0 : 0.0;
                return make(std::move(n));
            }
            auto slot = resolve_(name);
            if (!slot) {
                std::string message = fmt::format("unknown field '{}'", name);
                if (auto hint = core::closest_match(name, names_))
                    message += fmt::format(" (did you mean '{}'?)", *hint);
                fail(message);
                return make({});
            }
            Expression::Node n;
            n.kind = Expression::Node::field;
            n.slot = *slot;
            return make(std::move(n));
        }
        fail(fmt::format("unexpected '{}'", text_.substr(pos_)));
        return make({});
    }

    const std::string& text_;
    const Expression::Resolver& resolve_;
    const std::vector<std::string>& names_;
    std::size_t pos_ = 0;
    int depth_ = 0;
};

// Non-zero and known.
bool truth(double v) {
    return v != 0.0 && !std::isnan(v);
}

double eval(const Expression::Node& n, std::span<const double> fields) {
    switch (n.kind) {
        case Expression::Node::number:
            return n.value;
        case Expression::Node::field:
            return n.slot < fields.size() ? fields[n.slot] : std::numeric_limits<double>::quiet_NaN();
        case Expression::Node::logical_not:
            return truth(eval(*n.operands[0], fields)) ? 0.0 : 1.0;
        case Expression::Node::logical_and:
            for (const auto& operand : n.operands)
                if (!truth(eval(*operand, fields))) return 0.0;
            return 1.0;
        case Expression::Node::logical_or:
            for (const auto& operand : n.operands)
                if (truth(eval(*operand, fields))) return 1.0;
            return 0.0;
        case Expression::Node::compare: {
            double a = eval(*n.operands[0], fields), b = eval(*n.operands[1], fields);
            if (std::isnan(a) || std::isnan(b)) return 0.0;  // unknown: even != fails
            if (n.op == "<") return a < b;
            if (n.op == "<=") return a <= b;
            if (n.op == ">") return a > b;
            if (n.op == ">=") return a >= b;
            if (n.op == "==") return a == b;
            return a != b;
        }
    }
    return 0.0;
}

}  // namespace

Expression::Expression(std::shared_ptr<const Node> root) : root_(std::move(root)) {}
Expression::Expression(const Expression&) = default;
Expression& Expression::operator=(const Expression&) = default;
Expression::Expression(Expression&&) noexcept = default;
Expression& Expression::operator=(Expression&&) noexcept = default;
Expression::~Expression() = default;

std::optional<Expression> Expression::parse(const std::string& text, const Resolver& resolve,
                                            const std::vector<std::string>& names, std::string& error) {
    Parser parser(text, resolve, names);
    NodePtr root = parser.parse();
    if (!parser.error.empty()) {
        error = parser.error;
        return std::nullopt;
    }
    return Expression(root);
}

bool Expression::evaluate(std::span<const double> values) const {
    return truth(eval(*root_, values));
}

}  // namespace podsim::sweep
