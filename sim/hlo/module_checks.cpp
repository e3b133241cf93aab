#include "hlo/module_checks.hpp"

#include <fmt/format.h>

namespace podsim::hlo {
namespace {

class Checker {
  public:
    Checker(Module& module, core::Diagnostics& d) : m_(module), d_(d) {}

    void run() {
        if (m_.computations.empty()) {
            d_.error({m_.path, 0, 0}, "", "the module has no computations");
            return;
        }
        if (m_.entry < 0 || m_.entry >= static_cast<int>(m_.computations.size())) {
            d_.error({m_.path, 0, 0}, "", "the module has no ENTRY computation");
            return;
        }
        for (Computation& c : m_.computations) computation(c);
        if (d_.empty()) cycles();
    }

  private:
    void error(const Computation& c, const Instruction* inst, std::string message) {
        const int line = inst ? inst->line : c.line;
        const std::string key = inst ? (line > 0 ? inst->name : c.name + "/" + inst->name) : c.name;
        d_.error({m_.path, line, line > 0 ? 1 : 0}, key, std::move(message));
    }

    bool valid_computation(int index) const {
        return index >= 0 && index < static_cast<int>(m_.computations.size());
    }

    void computation(Computation& c) {
        if (c.instructions.empty()) {
            error(c, nullptr, "a computation without instructions");
            return;
        }
        if (c.root < 0 || c.root >= static_cast<int>(c.instructions.size())) {
            error(c, nullptr, "the computation has no root instruction");
            return;
        }
        c.parameters.clear();
        for (std::size_t i = 0; i < c.instructions.size(); ++i) {
            const Instruction& inst = c.instructions[i];
            if (inst.opcode != Opcode::parameter) continue;
            const auto n = static_cast<std::size_t>(inst.parameter_number);
            if (inst.parameter_number < 0 || n >= c.instructions.size()) {
                error(c, &inst, fmt::format("parameter number {} is out of range", inst.parameter_number));
                continue;
            }
            if (c.parameters.size() <= n) c.parameters.resize(n + 1, -1);
            if (c.parameters[n] >= 0) {
                error(c, &inst, fmt::format("a second parameter({})", n));
                continue;
            }
            c.parameters[n] = static_cast<int>(i);
        }
        for (std::size_t n = 0; n < c.parameters.size(); ++n) {
            if (c.parameters[n] < 0) error(c, nullptr, fmt::format("parameter({}) is missing", n));
        }
        for (const Instruction& inst : c.instructions) instruction(c, inst);
    }

    void instruction(const Computation& c, const Instruction& inst) {
        // Each dimension is bounded as it is read; their product is not. XLA's ShapeUtil refuses a
        // shape whose byte size overflows int64 (ValidateShape); 2^200 bytes of a parameter were
        // reported as memory that does not fit.
        if (const double bytes = inst.shape.bytes(); !(bytes < 9223372036854775807.0)) {
            error(c, &inst, fmt::format("its shape holds {:.4g} bytes: more than 2^63 - 1", bytes));
            return;
        }
        for (int operand : inst.operands) {
            if (operand < 0 || operand >= static_cast<int>(c.instructions.size())) {
                error(c, &inst, "an operand is out of range");
                return;
            }
        }
        for (int called : inst.called) {
            if (!valid_computation(called)) {
                error(c, &inst, "a called computation is out of range");
                return;
            }
        }
        auto needs_called = [&](const char* what) {
            if (inst.called.empty())
                error(c, &inst, fmt::format("{} without the computation it calls", what));
        };
        switch (inst.opcode) {
            case Opcode::fusion:
                needs_called("a fusion");
                break;
            case Opcode::call:
                needs_called("a call");
                break;
            case Opcode::conditional:
                needs_called("a conditional");
                if (inst.operands.size() != inst.called.size() + 1)
                    error(c, &inst,
                          fmt::format("a conditional with {} branches takes {} operands (the branch index "
                                      "first), not {}",
                                      inst.called.size(), inst.called.size() + 1, inst.operands.size()));
                break;
            case Opcode::async_start:
                if (!inst.wrapped) needs_called("an async-start");
                break;
            case Opcode::while_:
                if (!valid_computation(inst.body) || !valid_computation(inst.condition))
                    error(c, &inst, "a while needs body= and condition= computations");
                if (inst.operands.size() != 1) error(c, &inst, "a while takes one operand (the loop state)");
                if (inst.known_trip_count == kBadTripCount)
                    error(c, &inst,
                          "the known_trip_count of its backend_config is not a whole number of iterations "
                          "(from 0 to 2^63 - 1)");
                break;
            case Opcode::get_tuple_element: {
                if (inst.operands.size() != 1) {
                    error(c, &inst, "get-tuple-element takes one operand");
                    break;
                }
                const Shape& s = c.instructions[static_cast<std::size_t>(inst.operands[0])].shape;
                if (!s.is_tuple() || inst.tuple_index < 0 ||
                    inst.tuple_index >= static_cast<std::int64_t>(s.tuple.size()))
                    error(c, &inst,
                          fmt::format("index={} is not an element of its operand's shape {}",
                                      inst.tuple_index, to_string(s)));
                break;
            }
            case Opcode::copy_start:
                if (inst.operands.size() != 1) error(c, &inst, "copy-start takes one operand");
                break;
            case Opcode::async_done:
            case Opcode::async_update:
            case Opcode::all_gather_done:
            case Opcode::all_reduce_done:
            case Opcode::collective_permute_done:
            case Opcode::copy_done:
            case Opcode::send_done:
            case Opcode::recv_done:
                if (inst.operands.size() != 1)
                    error(c, &inst, "the done half of an async pair takes one operand");
                break;
            default:
                break;
        }
    }

    // Calls must form a DAG: lowering inlines every call, and a cycle would never end.
    void cycles() {
        const std::size_t n = m_.computations.size();
        std::vector<int> state(n, 0);                            // 0 new, 1 on the stack, 2 done
        std::vector<std::pair<std::size_t, std::size_t>> stack;  // computation, next instruction
        for (std::size_t root = 0; root < n; ++root) {
            if (state[root]) continue;
            stack.emplace_back(root, 0);
            state[root] = 1;
            while (!stack.empty()) {
                auto& [ci, next] = stack.back();
                const Computation& c = m_.computations[ci];
                bool descended = false;
                while (!descended && next < c.instructions.size()) {
                    const Instruction& inst = c.instructions[next++];
                    std::vector<int> callees = inst.called;
                    if (inst.body >= 0) callees.push_back(inst.body);
                    if (inst.condition >= 0) callees.push_back(inst.condition);
                    for (int callee : callees) {
                        const auto k = static_cast<std::size_t>(callee);
                        if (state[k] == 1) {
                            error(c, &inst,
                                  fmt::format("calls computation {}, which calls it back",
                                              m_.computations[k].name));
                            return;
                        }
                        if (state[k] == 0) {
                            state[k] = 1;
                            stack.emplace_back(k, 0);
                            descended = true;
                            break;
                        }
                    }
                }
                if (!descended) {
                    state[stack.back().first] = 2;
                    stack.pop_back();
                }
            }
        }
    }

    Module& m_;
    core::Diagnostics& d_;
};

}  // namespace

void check_module(Module& module, core::Diagnostics& d) {
    Checker(module, d).run();
}

std::size_t Module::instruction_count() const {
    std::size_t n = 0;
    for (const auto& c : computations) n += c.instructions.size();
    return n;
}

}  // namespace podsim::hlo
