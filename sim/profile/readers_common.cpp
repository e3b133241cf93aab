#include "profile/readers_common.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <sstream>

namespace podsim::profile {
namespace {

// Dimensions of the (array) result of an HLO instruction's text, "%x = bf16[8,128]{1,0} op(...)";
// empty for tuples or when the text has no shape.
std::vector<double> hlo_output_dims(const std::string& text) {
    std::vector<double> dims;
    auto eq = text.find(" = ");
    if (eq == std::string::npos) return dims;
    auto open = text.find('[', eq);
    auto paren = text.find('(', eq);
    if (open == std::string::npos || (paren != std::string::npos && paren < open)) return dims;
    auto close = text.find(']', open);
    if (close == std::string::npos) return dims;
    std::stringstream in(text.substr(open + 1, close - open - 1));
    std::string item;
    while (std::getline(in, item, ',')) {
        char* end = nullptr;
        double d = std::strtod(item.c_str(), &end);
        if (end == item.c_str() || d <= 0) return {};
        dims.push_back(d);
    }
    return dims;
}

}  // namespace

double matmul_narrowest_dim(const std::string& hlo_text, double flops) {
    const std::vector<double> dims = hlo_output_dims(hlo_text);
    if (dims.size() < 2 || flops <= 0) return 0.0;
    double batch = 1.0;
    for (std::size_t i = 0; i + 2 < dims.size(); ++i) batch *= dims[i];
    const double m = dims[dims.size() - 2], n = dims.back();
    const double k = flops / (2.0 * batch * m * n);
    if (k < 1.0) return 0.0;
    return std::min({m, n, k});
}

double union_length(std::vector<Interval> v) {
    std::sort(v.begin(), v.end());
    double total = 0.0, start = 0.0, end = -1e300;
    for (const auto& [a, b] : v) {
        if (a > end) {
            if (end > start) total += end - start;
            start = a;
            end = b;
        } else {
            end = std::max(end, b);
        }
    }
    if (end > start) total += end - start;
    return total;
}

// Totals per op name -> MeasuredProfile per step, with host gaps from the device busy time.
MeasuredProfile finish(MeasuredProfile p, const std::map<std::string, MeasuredOp>& ops, double device_busy_s,
                       double window_s) {
    if (p.steps <= 0) p.steps = 1;
    const double steps = static_cast<double>(p.steps);
    for (const auto& [name, op] : ops) {
        p.category_s[op.category] += op.total_s / steps;
        p.category_count[op.category] += static_cast<long>(static_cast<double>(op.occurrences) / steps + 0.5);
        p.ops.push_back(op);
        if (op.category == "matmul") {
            if (op.narrowest_dim > 0) {
                p.matmul_s_by_narrowest_dim[op.narrowest_dim] += op.total_s / steps;
            } else {
                p.matmul_unshaped_s += op.total_s / steps;
            }
        }
    }
    std::sort(p.ops.begin(), p.ops.end(),
              [](const MeasuredOp& a, const MeasuredOp& b) { return a.total_s > b.total_s; });
    if (p.ops.size() > 50) p.ops.resize(50);
    if (p.step_time_s <= 0.0) p.step_time_s = window_s / steps;
    double host = (window_s - device_busy_s) / steps;
    if (host > 0) p.category_s["host"] = host;
    return p;
}

double dtype_size(const std::string& dtype) {
    std::string d = dtype;
    for (char& c : d) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (d.find("bfloat16") != std::string::npos || d.find("half") != std::string::npos || d == "bf16" ||
        d == "fp16") {
        return 2;
    }
    if (d.find("double") != std::string::npos || d.find("int64") != std::string::npos || d == "long")
        return 8;
    if (d.find("int8") != std::string::npos || d.find("byte") != std::string::npos) return 1;
    return 4;
}

}  // namespace podsim::profile
