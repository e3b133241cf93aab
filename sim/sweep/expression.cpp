#include "sweep/expression.hpp"

#include <cctype>
#include <charconv>

#include <fmt/format.h>

#include "core/quantity.hpp"
#include "core/suggest.hpp"

namespace podsim::sweep {

struct Expression::Node {
    enum Kind { number, field, compare, logical_and, logical_or, logical_not } kind = number;
    double value = 0.0;
    std::string name;
    std::string op;
    std::shared_ptr<const Node> left, right;
};

namespace {

using NodePtr = std::shared_ptr<const Expression::Node>;

class Parser {
  public:
    Parser(const std::string& text, const std::vector<std::string>& fields) : text_(text), fields_(fields) {}

    NodePtr parse() {
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

    NodePtr parse_or() {
        NodePtr left = parse_and();
        while (word("or") || symbol("||")) {
            Expression::Node n;
            n.kind = Expression::Node::logical_or;
            n.left = left;
            n.right = parse_and();
            left = make(std::move(n));
        }
        return left;
    }
    NodePtr parse_and() {
        NodePtr left = parse_not();
        while (word("and") || symbol("&&")) {
            Expression::Node n;
            n.kind = Expression::Node::logical_and;
            n.left = left;
            n.right = parse_not();
            left = make(std::move(n));
        }
        return left;
    }
    NodePtr parse_not() {
        if (word("not") || symbol("!")) {
            Expression::Node n;
            n.kind = Expression::Node::logical_not;
            n.left = parse_not();
            return make(std::move(n));
        }
        return parse_compare();
    }
    NodePtr parse_compare() {
        NodePtr left = parse_atom();
        for (const char* op : {"<=", ">=", "==", "!=", "<", ">"}) {
            if (symbol(op)) {
                Expression::Node n;
                n.kind = Expression::Node::compare;
                n.op = op;
                n.left = left;
                n.right = parse_atom();
                return make(std::move(n));
            }
        }
        return left;
    }
    NodePtr parse_atom() {
        skip();
        if (symbol("(")) {
            NodePtr inner = parse_or();
            if (!symbol(")")) fail("missing ')'");
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
            if (std::find(fields_.begin(), fields_.end(), name) == fields_.end()) {
                std::string message = fmt::format("unknown field '{}'", name);
                if (auto hint = core::closest_match(name, fields_))
                    message += fmt::format(" (did you mean '{}'?)", *hint);
                fail(message);
                return make({});
            }
            Expression::Node n;
            n.kind = Expression::Node::field;
            n.name = name;
            return make(std::move(n));
        }
        fail(fmt::format("unexpected '{}'", text_.substr(pos_)));
        return make({});
    }

    const std::string& text_;
    const std::vector<std::string>& fields_;
    std::size_t pos_ = 0;
};

double eval(const Expression::Node& n, const Expression::Fields& fields) {
    switch (n.kind) {
        case Expression::Node::number:
            return n.value;
        case Expression::Node::field:
            return fields(n.name).value_or(0.0);
        case Expression::Node::logical_not:
            return eval(*n.left, fields) == 0.0 ? 1.0 : 0.0;
        case Expression::Node::logical_and:
            return eval(*n.left, fields) != 0.0 && eval(*n.right, fields) != 0.0 ? 1.0 : 0.0;
        case Expression::Node::logical_or:
            return eval(*n.left, fields) != 0.0 || eval(*n.right, fields) != 0.0 ? 1.0 : 0.0;
        case Expression::Node::compare: {
            double a = eval(*n.left, fields), b = eval(*n.right, fields);
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

std::optional<Expression> Expression::parse(const std::string& text,
                                            const std::vector<std::string>& known_fields,
                                            std::string& error) {
    Parser parser(text, known_fields);
    NodePtr root = parser.parse();
    if (!parser.error.empty()) {
        error = parser.error;
        return std::nullopt;
    }
    return Expression(root);
}

bool Expression::evaluate(const Fields& fields) const {
    return eval(*root_, fields) != 0.0;
}

}  // namespace podsim::sweep
