#include "hlo/text_reader.hpp"

#include <cctype>
#include <charconv>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

#include "core/diagnostics.hpp"
#include "hlo/module_checks.hpp"

// The grammar is XLA's HLO text format (xla/hlo/parser/hlo_parser.cc): one instruction per line,
//   [ROOT] %name = SHAPE opcode(OPERANDS), attribute=value, ...
// inside `[ENTRY] %computation (PARAMS) -> SHAPE {` ... `}`, after an `HloModule name, ...` header
// and the stack-frame tables (FileNames, FunctionNames, FileLocations, StackFrames).

namespace podsim::hlo {
namespace {

constexpr std::size_t kMaxErrors = 50;

bool is_name_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
}

// The value of a quoted string (its escapes undone).
std::string unescape(std::string_view quoted) {
    std::string out;
    out.reserve(quoted.size());
    for (std::size_t i = 0; i < quoted.size(); ++i) {
        if (quoted[i] == '\\' && i + 1 < quoted.size()) {
            const char next = quoted[++i];
            out += next == 'n' ? '\n' : next == 't' ? '\t' : next;
        } else {
            out += quoted[i];
        }
    }
    return out;
}

struct ParseError {
    std::size_t column;  // 0-based offset in the line (in the attribute's value when `relative`)
    std::string message;
    bool relative = false;
};

// A cursor over one line.
class Line {
  public:
    explicit Line(std::string_view text, bool relative = false) : s_(text), relative_(relative) {}
    std::size_t pos() const { return i_; }
    void set_pos(std::size_t pos) { i_ = pos; }
    bool at_end() {
        skip();
        return i_ >= s_.size();
    }
    char peek() {
        skip();
        return i_ < s_.size() ? s_[i_] : '\0';
    }
    // Skips blanks and /* ... */ comments (the printer's /*index=5*/ markers).
    void skip() {
        while (i_ < s_.size()) {
            if (std::isspace(static_cast<unsigned char>(s_[i_]))) {
                ++i_;
            } else if (s_.compare(i_, 2, "/*") == 0) {
                const std::size_t end = s_.find("*/", i_ + 2);
                i_ = end == std::string_view::npos ? s_.size() : end + 2;
            } else {
                break;
            }
        }
    }
    bool eat(char c) {
        if (peek() == c) {
            ++i_;
            return true;
        }
        return false;
    }
    bool eat(std::string_view word) {
        skip();
        if (s_.compare(i_, word.size(), word) == 0) {
            i_ += word.size();
            return true;
        }
        return false;
    }
    void expect(char c, std::string_view what) {
        if (!eat(c)) fail(fmt::format("expected '{}' {}", c, what));
    }
    std::string_view name() {
        skip();
        if (i_ < s_.size() && s_[i_] == '%') ++i_;
        const std::size_t start = i_;
        while (i_ < s_.size() && is_name_char(s_[i_])) ++i_;
        return s_.substr(start, i_ - start);
    }
    std::string_view word() {
        skip();
        const std::size_t start = i_;
        while (i_ < s_.size() &&
               (std::isalnum(static_cast<unsigned char>(s_[i_])) || s_[i_] == '_' || s_[i_] == '-'))
            ++i_;
        return s_.substr(start, i_ - start);
    }
    std::int64_t integer(std::string_view what) {
        skip();
        std::int64_t value = 0;
        const char* begin = s_.data() + i_;
        auto [ptr, ec] = std::from_chars(begin, s_.data() + s_.size(), value);
        if (ec != std::errc() || ptr == begin) fail(fmt::format("expected an integer {}", what));
        i_ += static_cast<std::size_t>(ptr - begin);
        return value;
    }
    std::vector<std::int64_t> integer_list(char open, char close, std::string_view what) {
        expect(open, what);
        std::vector<std::int64_t> out;
        if (eat(close)) return out;
        while (true) {
            out.push_back(integer(what));
            if (eat(close)) return out;
            expect(',', what);
        }
    }
    // A value up to the next comma at nesting depth 0 (or the end of the line): brackets, braces,
    // parentheses and quoted strings nest.
    std::string_view raw_value() {
        skip();
        const std::size_t start = i_;
        int depth = 0;
        while (i_ < s_.size()) {
            const char c = s_[i_];
            if (c == '"' || c == '\'') {
                ++i_;
                while (i_ < s_.size() && s_[i_] != c) i_ += s_[i_] == '\\' ? 2 : 1;
                if (i_ >= s_.size()) fail("a quoted string does not end on its line");
                ++i_;
                continue;
            }
            if (c == '{' || c == '[' || c == '(') ++depth;
            if (c == '}' || c == ']' || c == ')') {
                if (--depth < 0) fail(fmt::format("unbalanced '{}'", c));
            }
            if (c == ',' && depth == 0) break;
            ++i_;
        }
        if (depth != 0) fail("a value's brackets do not close on its line");
        std::size_t end = i_;
        while (end > start && std::isspace(static_cast<unsigned char>(s_[end - 1]))) --end;
        return s_.substr(start, end - start);
    }
    // Skips one balanced (...) group.
    void skip_group() {
        expect('(', "");
        int depth = 1;
        while (i_ < s_.size() && depth > 0) {
            if (s_[i_] == '(') ++depth;
            if (s_[i_] == ')') --depth;
            ++i_;
        }
        if (depth > 0) fail("unbalanced '('");
    }
    [[noreturn]] void fail(std::string message) const { throw ParseError{i_, std::move(message), relative_}; }

  private:
    std::string_view s_;
    std::size_t i_ = 0;
    bool relative_ = false;
};

// Tuples nest at most this deep: XLA's own modules nest two or three levels.
constexpr int kMaxShapeDepth = 64;

Shape parse_shape(Line& line, int depth = 0);

void parse_layout(Line& line, Shape& shape) {
    // {minor_to_major[:ATTRS]} with ATTRS such as T(8,128)(2,1), S(1), E(4), L(...), D(...).
    line.expect('{', "to open the layout");
    if (line.eat('}')) return;
    if (line.peek() != ':') {
        while (true) {
            shape.minor_to_major.push_back(line.integer("in the layout's minor-to-major list"));
            if (!line.eat(',')) break;
        }
    }
    if (line.eat(':')) {
        while (!line.eat('}')) {
            const std::string_view letter = line.word();
            if (letter.empty()) line.fail("unexpected character in the layout");
            bool first = true;
            while (line.peek() == '(') {
                if (letter == "T" && first) {
                    shape.tile = line.integer_list('(', ')', "in a layout tile");
                } else if ((letter == "S" || letter == "E") && first) {
                    line.expect('(', "");
                    const std::int64_t v = line.integer("in the layout");
                    line.expect(')', "after the layout value");
                    (letter == "S" ? shape.memory_space : shape.element_bits) = v;
                } else {
                    line.skip_group();  // a group podsim has no use for (a second tile, D(...), ...)
                }
                first = false;
            }
        }
        return;
    }
    line.expect('}', "to close the layout");
}

Shape parse_shape(Line& line, int depth) {
    Shape shape;
    if (line.eat('(')) {
        if (depth >= kMaxShapeDepth)
            line.fail(fmt::format("tuple shapes nested more than {} deep", kMaxShapeDepth));
        shape.type = ElementType::tuple;
        if (line.eat(')')) return shape;
        while (true) {
            shape.tuple.push_back(parse_shape(line, depth + 1));
            if (line.eat(')')) return shape;
            line.expect(',', "between the shapes of a tuple");
        }
    }
    const std::size_t at = line.pos();
    const std::string_view type = line.word();
    auto parsed = parse_element_type(type);
    if (!parsed) {
        line.set_pos(at);
        line.fail(type.empty() ? std::string("expected a shape")
                               : fmt::format("unknown element type '{}'", type));
    }
    shape.type = *parsed;
    line.expect('[', "after the element type");
    if (!line.eat(']')) {
        while (true) {
            line.eat("<=");  // a bounded dynamic dimension: its bound is what memory holds
            if (line.eat('?')) line.fail("unbounded dynamic dimensions have no size to price");
            const std::int64_t d = line.integer("as a dimension");
            if (d < 0 || d > (std::int64_t{1} << 40))
                line.fail(fmt::format("dimension {} is out of range", d));
            shape.dims.push_back(d);
            if (line.eat(']')) break;
            line.expect(',', "between dimensions");
        }
    }
    if (line.peek() == '{') parse_layout(line, shape);
    return shape;
}

std::string op_name_of(std::string_view metadata) {
    // metadata={op_name="..." source_file="..." ...}: the quoted value after `op_name=`.
    std::size_t at = 0;
    while ((at = metadata.find("op_name=\"", at)) != std::string_view::npos) {
        if (at == 0 || metadata[at - 1] == '{' || metadata[at - 1] == ' ') break;
        ++at;
    }
    if (at == std::string_view::npos) return {};
    std::size_t i = at + 9;
    const std::size_t start = i;
    while (i < metadata.size() && metadata[i] != '"') i += metadata[i] == '\\' ? 2 : 1;
    return unescape(metadata.substr(start, std::min(i, metadata.size()) - start));
}

// known_trip_count {"n":"16"} in a while's backend_config (JSON, possibly as a quoted string):
// kNoTripCount without one, kBadTripCount where "n" holds no whole number of iterations.
std::int64_t known_trip_count(std::string_view config) {
    const std::size_t at = config.find("known_trip_count");
    if (at == std::string_view::npos) return kNoTripCount;
    const std::size_t n = config.find("\"n\"", at);
    if (n == std::string_view::npos) return kNoTripCount;
    std::size_t i = n + 3;
    while (i < config.size() &&
           (config[i] == ' ' || config[i] == ':' || config[i] == '"' || config[i] == '\\'))
        ++i;
    std::int64_t value = 0;
    auto [ptr, ec] = std::from_chars(config.data() + i, config.data() + config.size(), value);
    const bool whole =
        ec == std::errc() && ptr != config.data() + i && value >= 0 &&
        (ptr == config.data() + config.size() || !std::isalnum(static_cast<unsigned char>(*ptr)));
    return whole ? value : kBadTripCount;
}

std::string unquote(std::string_view value) {
    if (value.size() >= 2 && value.front() == '"' && value.back() == '"')
        return unescape(value.substr(1, value.size() - 2));
    return std::string(value);
}

// What an instruction refers to by name, resolved once every computation is read.
struct Pending {
    bool synthetic = false;  // a get-tuple-element read from `%t#k`: its shape is its operand's element
    std::vector<std::pair<std::string_view, std::size_t>> operands;  // name, column
    std::vector<std::pair<std::string_view, int>> called;  // name, role (-1 call, 0 body, 1 condition)
    std::size_t called_column = 0;
};

class TextReader {
  public:
    TextReader(const std::string& path, std::string_view text) : path_(path), text_(text) {
        module_.path = path;
        module_.format = "text";
    }

    Module read() {
        std::size_t begin = 0;
        int line_number = 0;
        bool in_table = false;
        bool seen_header = false;
        while (begin <= text_.size() && d_.size() < kMaxErrors) {
            std::size_t end = text_.find('\n', begin);
            if (end == std::string_view::npos) end = text_.size();
            std::string_view raw = text_.substr(begin, end - begin);
            ++line_number;
            begin = end + 1;
            std::string_view line = trim(raw);
            if (line.empty()) {
                in_table = false;
                if (end == text_.size()) break;
                continue;
            }
            if (line.starts_with("//")) continue;
            if (in_table) continue;
            if (computation_ < 0) {
                if (line.starts_with("HloModule")) {
                    header(raw, line_number);
                    seen_header = true;
                } else if (line == "FileNames" || line == "FunctionNames" || line == "FileLocations" ||
                           line == "StackFrames") {
                    in_table = true;  // the stack-frame tables run to the next blank line
                } else if (line.back() == '{') {
                    if (!seen_header) {
                        error(line_number, 0, "", "expected `HloModule NAME` before the first computation");
                        seen_header = true;
                    }
                    open_computation(raw, line_number);
                } else {
                    error(line_number, column_of(raw, line), "",
                          seen_header ? "expected a computation (`%name (params) -> shape {`)"
                                      : "not HLO text: expected `HloModule NAME`");
                    if (!seen_header) break;
                }
            } else if (line.starts_with("}")) {
                close_computation(line_number);
            } else {
                instruction(raw, line_number);
            }
            if (end == text_.size()) break;
        }
        if (computation_ >= 0 && d_.size() < kMaxErrors)
            error(line_number, 0, module_.computations.back().name, "the computation is not closed with `}`");
        if (!seen_header && d_.empty()) error(1, 0, "", "empty file: expected `HloModule NAME`");
        if (d_.size() >= kMaxErrors) {
            d_.error({path_, 0, 0}, "", fmt::format("stopped after {} errors", kMaxErrors));
            throw core::UserError(d_);
        }
        if (d_.empty()) resolve();
        if (d_.empty()) check_module(module_, d_);
        core::throw_if_errors(d_);
        return std::move(module_);
    }

  private:
    static std::string_view trim(std::string_view s) {
        while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
        while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
        return s;
    }
    static int column_of(std::string_view raw, std::string_view part) {
        return static_cast<int>(part.data() - raw.data()) + 1;
    }
    void error(int line, int column, std::string_view key, std::string message) {
        d_.error({path_, line, column}, std::string(key), std::move(message));
    }

    void header(std::string_view raw, int line_number) {
        Line line(raw);
        line.eat("HloModule");
        module_.name = std::string(line.name());
        std::size_t at = 0;
        try {
            while (line.eat(',')) {
                const std::string_view key = line.word();
                line.expect('=', "after an attribute name");
                at = line.pos();
                const std::string_view value = line.raw_value();
                Line v(value, true);
                if (key == "is_scheduled") {
                    module_.is_scheduled = value == "true";
                } else if (key == "num_partitions" || key == "replica_count") {
                    const std::int64_t n = v.integer("");
                    if (n < 1 || n > (1 << 20)) v.fail(fmt::format("{}={} is out of range", key, n));
                    (key == "num_partitions" ? module_.num_partitions : module_.replica_count) = n;
                } else if (key == "input_output_alias") {
                    v.expect('{', "to open input_output_alias");
                    while (!v.eat('}')) {
                        InputOutputAlias alias;
                        alias.output_index = v.integer_list('{', '}', "as an output index");
                        v.expect(':', "after the output index");
                        v.expect('(', "before the parameter");
                        alias.parameter = v.integer("as the parameter number");
                        v.expect(',', "after the parameter number");
                        alias.parameter_index = v.integer_list('{', '}', "as the parameter index");
                        if (v.eat(',')) (void)v.word();  // may-alias / must-alias
                        v.expect(')', "to close an alias");
                        v.eat(',');
                        module_.input_output_alias.push_back(std::move(alias));
                    }
                }
            }
            if (!line.at_end()) line.fail("expected `, attribute=value` in the HloModule header");
        } catch (const ParseError& e) {
            error(line_number, static_cast<int>(e.relative ? at + e.column : e.column) + 1, "HloModule",
                  e.message);
        }
    }

    void open_computation(std::string_view raw, int line_number) {
        Line line(raw);
        const bool entry = line.eat("ENTRY ");
        Computation c;
        c.name = std::string(line.name());
        c.line = line_number;
        if (c.name.empty())
            error(line_number, static_cast<int>(line.pos()) + 1, "", "a computation needs a name");
        if (computation_names_.count(c.name))
            error(line_number, 1, c.name, "a second computation of this name");
        computation_names_[c.name] = static_cast<int>(module_.computations.size());
        if (entry) {
            if (module_.entry >= 0) error(line_number, 1, c.name, "a second ENTRY computation");
            module_.entry = static_cast<int>(module_.computations.size());
        }
        module_.computations.push_back(std::move(c));
        pending_.emplace_back();
        instruction_names_.clear();
        computation_ = static_cast<int>(module_.computations.size()) - 1;
    }

    void close_computation(int line_number) {
        Computation& c = module_.computations.back();
        if (c.instructions.empty() && d_.empty())
            error(line_number, 1, c.name, "a computation without instructions");
        if (c.root < 0 && !c.instructions.empty()) c.root = static_cast<int>(c.instructions.size()) - 1;
        computation_ = -1;
    }

    void instruction(std::string_view raw, int line_number) {
        Computation& c = module_.computations.back();
        std::vector<Pending>& pending = pending_.back();
        Instruction inst;
        inst.line = line_number;
        line_number_ = line_number;
        Pending refs;
        Line line(raw);
        try {
            const bool root = line.eat("ROOT ");
            inst.name = std::string(line.name());
            if (inst.name.empty()) line.fail("expected an instruction name");
            line.expect('=', "after the instruction name");
            inst.shape = parse_shape(line);
            const std::size_t opcode_at = line.pos();
            opcode(line, inst, opcode_at);
            operands(line, inst, refs);
            while (line.eat(',')) attribute(line, inst, refs);
            if (!line.at_end()) line.fail("expected `, attribute=value` or the end of the line");
            if (root) {
                if (c.root >= 0) line.fail("a second ROOT in the computation");
                c.root = static_cast<int>(c.instructions.size());
            }
        } catch (const ParseError& e) {
            error(line_number, static_cast<int>(e.column) + 1, inst.name, e.message);
            return;
        }
        if (instruction_names_.count(inst.name)) {
            error(line_number, 1, inst.name, "a second instruction of this name in the computation");
            return;
        }
        instruction_names_.emplace(inst.name, static_cast<int>(c.instructions.size()));
        c.instructions.push_back(std::move(inst));
        pending.push_back(std::move(refs));
    }

    static void opcode(Line& line, Instruction& inst, std::size_t at) {
        const std::string_view word = line.word();
        if (auto op = parse_opcode(word)) {
            inst.opcode = *op;
            return;
        }
        // `fusion-start`, `reduce-scatter-done`: the async wrapper written with its op's name.
        for (auto [suffix, wrapper] : {std::pair{std::string_view("-start"), Opcode::async_start},
                                       std::pair{std::string_view("-done"), Opcode::async_done},
                                       std::pair{std::string_view("-update"), Opcode::async_update}}) {
            if (word.size() > suffix.size() && word.ends_with(suffix)) {
                if (auto wrapped = parse_opcode(word.substr(0, word.size() - suffix.size()))) {
                    inst.opcode = wrapper;
                    inst.wrapped = *wrapped;
                    return;
                }
            }
        }
        line.set_pos(at);
        line.fail(word.empty() ? std::string("expected an opcode")
                               : fmt::format("unknown opcode '{}'", word));
    }

    // The name of a get-tuple-element of `tuple` at `index`, made (once per computation) before
    // the instruction being read.
    std::string_view element(std::string_view tuple, std::int64_t index, std::size_t column) {
        // Names live in a node-based set: the views handed out stay valid.
        const auto [stored, added] = element_names_.insert(fmt::format("{}#{}", tuple, index));
        const std::string& name = *stored;
        if (instruction_names_.count(name)) return name;
        Computation& c = module_.computations.back();
        Instruction gte;
        gte.name = name;
        gte.opcode = Opcode::get_tuple_element;
        gte.tuple_index = index;
        gte.line = line_number_;
        Pending refs;
        refs.synthetic = true;
        refs.operands.emplace_back(tuple, column);
        instruction_names_.emplace(name, static_cast<int>(c.instructions.size()));
        c.instructions.push_back(std::move(gte));
        pending_.back().push_back(std::move(refs));
        (void)added;
        return name;
    }

    void operands(Line& line, Instruction& inst, Pending& refs) {
        line.expect('(', "after the opcode");
        if (inst.opcode == Opcode::constant || inst.opcode == Opcode::parameter) {
            const std::size_t at = line.pos();
            line.set_pos(at - 1);
            const std::string_view literal = line.raw_value();  // "(...)" whole
            const std::string_view inner = literal.substr(1, literal.size() >= 2 ? literal.size() - 2 : 0);
            std::int64_t value = 0;
            const std::string_view t = trim(inner);
            auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), value);
            const bool integer = ec == std::errc() && ptr == t.data() + t.size() && !t.empty();
            if (inst.opcode == Opcode::parameter) {
                if (!integer || value < 0) {
                    line.set_pos(at);
                    line.fail("parameter(N) needs its number");
                }
                inst.parameter_number = value;
            } else if (integer) {
                inst.integer_value = value;
            }
            return;
        }
        if (line.eat(')')) return;
        while (true) {
            const std::size_t at = line.pos();
            line.skip();
            // An operand may carry its shape first (`f32[4]{0} %x`, older printers).
            const std::size_t before = line.pos();
            std::string_view name = line.name();
            if (line.peek() == '[' || (name.empty() && line.peek() == '(')) {
                line.set_pos(before);
                (void)parse_shape(line);
                name = line.name();
            }
            if (name.empty()) {
                line.set_pos(at);
                line.fail("expected an operand name");
            }
            // `%t#k`: element k of tuple %t, as --xla_dump_to prints operands without their
            // get-tuple-element: read as one.
            while (line.peek() == '#') {
                line.eat('#');
                const std::int64_t index = line.integer("after '#' (a tuple element)");
                name = element(name, index, at);
            }
            refs.operands.emplace_back(name, line.pos());
            if (line.eat(')')) return;
            line.expect(',', "between operands");
        }
    }

    static std::vector<std::string_view> computation_names(std::string_view value) {
        // %name, or {%a, %b}
        std::vector<std::string_view> names;
        Line v(value, true);
        const bool list = v.eat('{');
        while (!v.at_end()) {
            const std::string_view n = v.name();
            if (n.empty()) break;
            names.push_back(n);
            if (!v.eat(',')) break;
        }
        if (list) v.eat('}');
        if (!v.at_end() || names.empty()) v.fail("expected a computation name or a list of them in braces");
        return names;
    }

    static void attribute(Line& line, Instruction& inst, Pending& refs) {
        const std::string_view key = line.word();
        if (key.empty()) line.fail("expected an attribute name");
        line.expect('=', fmt::format("after attribute {}", key));
        const std::size_t at = line.pos();
        const std::string_view value = line.raw_value();
        auto fail_value = [&](const std::string& message) {
            line.set_pos(at);
            line.fail(fmt::format("{}: {}", key, message));
        };
        try {
            if (key == "calls" || key == "to_apply" || key == "branch_computations" ||
                key == "true_computation" || key == "false_computation") {
                for (auto n : computation_names(value)) refs.called.emplace_back(n, -1);
                refs.called_column = at;
            } else if (key == "body" || key == "condition") {
                for (auto n : computation_names(value)) refs.called.emplace_back(n, key == "body" ? 0 : 1);
                refs.called_column = at;
            } else if (key == "kind") {
                inst.fusion_kind = value == "kLoop"     ? FusionKind::loop
                                   : value == "kInput"  ? FusionKind::input
                                   : value == "kOutput" ? FusionKind::output
                                   : value == "kCustom" ? FusionKind::custom
                                                        : FusionKind::none;
                if (inst.fusion_kind == FusionKind::none)
                    fail_value(fmt::format("unknown fusion kind '{}'", value));
            } else if (key == "custom_call_target") {
                inst.custom_call_target = unquote(value);
            } else if (key == "backend_config") {
                if (inst.opcode == Opcode::while_) inst.known_trip_count = known_trip_count(unquote(value));
                if (inst.opcode == Opcode::custom_call ||
                    (inst.wrapped && *inst.wrapped == Opcode::custom_call))
                    inst.backend_config = unquote(value);
            } else if (key == "metadata") {
                inst.op_name = op_name_of(value);
            } else if (key == "index") {
                Line v(value, true);
                inst.tuple_index = v.integer("");
            } else if (key == "dimensions") {
                Line v(value, true);
                inst.dimensions = v.integer_list('{', '}', "");
            } else if (key == "lhs_batch_dims" || key == "rhs_batch_dims" || key == "lhs_contracting_dims" ||
                       key == "rhs_contracting_dims") {
                Line v(value, true);
                auto dims = v.integer_list('{', '}', "");
                (key == "lhs_batch_dims"         ? inst.dot.lhs_batch
                 : key == "rhs_batch_dims"       ? inst.dot.rhs_batch
                 : key == "lhs_contracting_dims" ? inst.dot.lhs_contracting
                                                 : inst.dot.rhs_contracting) = std::move(dims);
            } else if (key == "dim_labels") {
                // lhs_rhs->out, e.g. b01f_01io->b01f: the kernel's output feature dimension is its 'o'.
                const std::size_t underscore = value.find('_');
                const std::size_t arrow = value.find("->");
                if (underscore == std::string_view::npos || arrow == std::string_view::npos ||
                    arrow < underscore)
                    fail_value("expected lhs_rhs->out labels such as b01f_01io->b01f");
                const std::string_view rhs = value.substr(underscore + 1, arrow - underscore - 1);
                const std::size_t o = rhs.find('o');
                if (o == std::string_view::npos) fail_value("the kernel labels have no output feature 'o'");
                inst.kernel_output_feature_dim = static_cast<std::int64_t>(o);
            } else if (key == "feature_group_count" || key == "batch_group_count") {
                Line v(value, true);
                const std::int64_t n = v.integer("");
                if (n < 1) fail_value("must be at least 1");
                (key == "feature_group_count" ? inst.feature_group_count : inst.batch_group_count) = n;
            } else if (key == "replica_groups") {
                std::string why;
                auto groups = parse_replica_groups(std::string(value), why);
                if (!groups) fail_value(why);
                inst.replica_groups = std::move(*groups);
            } else if (key == "source_target_pairs") {
                Line v(value, true);
                v.expect('{', "");
                while (!v.eat('}')) {
                    auto pair = v.integer_list('{', '}', "as a source-target pair");
                    if (pair.size() != 2 || pair[0] < 0 || pair[1] < 0 || pair[0] >= (1 << 20) ||
                        pair[1] >= (1 << 20))
                        v.fail("a source-target pair is {source,target}, two device ids");
                    inst.source_target_pairs.emplace_back(pair[0], pair[1]);
                    v.eat(',');
                }
            } else if (key == "output_to_operand_aliasing") {
                Line v(value, true);
                v.expect('{', "");
                while (!v.eat('}')) {
                    OutputOperandAlias alias;
                    alias.output_index = v.integer_list('{', '}', "as an output index");
                    v.expect(':', "after the output index");
                    v.expect('(', "before the operand");
                    alias.operand = v.integer("as the operand number");
                    v.expect(',', "after the operand number");
                    alias.operand_index = v.integer_list('{', '}', "as the operand's index");
                    v.expect(')', "to close an alias");
                    v.eat(',');
                    inst.output_operand_aliasing.push_back(std::move(alias));
                }
            } else if (key == "channel_id") {
                Line v(value, true);
                inst.channel_id = v.integer("");
            } else if (key == "use_global_device_ids") {
                inst.use_global_device_ids = value == "true";
            } else if (key == "direction") {
                inst.comparison_direction = std::string(value);
            }
            // Other attributes (sharding, frontend_attributes, slice, padding, window, ...) do not
            // change what podsim prices; their values were checked to be balanced.
        } catch (const ParseError& e) {
            if (!e.relative) throw;
            throw ParseError{at + e.column, fmt::format("{}: {}", key, e.message)};
        }
    }

    void resolve() {
        for (std::size_t ci = 0; ci < module_.computations.size(); ++ci) {
            Computation& c = module_.computations[ci];
            std::unordered_map<std::string_view, int> names;
            for (std::size_t i = 0; i < c.instructions.size(); ++i)
                names.emplace(c.instructions[i].name, static_cast<int>(i));
            for (std::size_t i = 0; i < c.instructions.size(); ++i) {
                Instruction& inst = c.instructions[i];
                const Pending& refs = pending_[ci][i];
                for (const auto& [name, column] : refs.operands) {
                    auto it = names.find(name);
                    if (it == names.end()) {
                        error(
                            inst.line, static_cast<int>(column) + 1, inst.name,
                            fmt::format("operand %{} is not an instruction of computation {}", name, c.name));
                        continue;
                    }
                    if (it->second >= static_cast<int>(i) && module_.is_scheduled)
                        error(inst.line, static_cast<int>(column) + 1, inst.name,
                              fmt::format("operand %{} comes later in the scheduled computation", name));
                    inst.operands.push_back(it->second);
                }
                if (refs.synthetic && inst.operands.size() == 1) {
                    const Shape& tuple = c.instructions[static_cast<std::size_t>(inst.operands[0])].shape;
                    if (tuple.is_tuple() && inst.tuple_index >= 0 &&
                        inst.tuple_index < static_cast<std::int64_t>(tuple.tuple.size()))
                        inst.shape = tuple.tuple[static_cast<std::size_t>(inst.tuple_index)];
                }
                for (const auto& [name, role] : refs.called) {
                    auto it = computation_names_.find(std::string(name));
                    if (it == computation_names_.end()) {
                        error(inst.line, static_cast<int>(refs.called_column) + 1, inst.name,
                              fmt::format("calls computation %{}, which the module does not define", name));
                        continue;
                    }
                    if (role == 0) {
                        inst.body = it->second;
                    } else if (role == 1) {
                        inst.condition = it->second;
                    } else {
                        inst.called.push_back(it->second);
                    }
                }
            }
        }
        if (module_.entry < 0 && !module_.computations.empty())
            module_.entry = static_cast<int>(module_.computations.size()) - 1;  // XLA's default: the last
    }

    const std::string& path_;
    std::string_view text_;
    core::Diagnostics d_;
    Module module_;
    int computation_ = -1;
    std::unordered_map<std::string, int> computation_names_;
    std::unordered_map<std::string, int> instruction_names_;
    std::vector<std::vector<Pending>> pending_;
    std::set<std::string> element_names_;
    int line_number_ = 0;
};

}  // namespace

Module read_text(const std::string& path, std::string_view text) {
    return TextReader(path, text).read();
}

bool looks_like_hlo_text(std::string_view bytes) {
    std::size_t i = 0;
    while (i < bytes.size()) {
        while (i < bytes.size() && std::isspace(static_cast<unsigned char>(bytes[i]))) ++i;
        if (bytes.compare(i, 2, "//") == 0) {
            const std::size_t end = bytes.find('\n', i);
            if (end == std::string_view::npos) return false;
            i = end + 1;
            continue;
        }
        return bytes.compare(i, 9, "HloModule") == 0;
    }
    return false;
}

}  // namespace podsim::hlo
