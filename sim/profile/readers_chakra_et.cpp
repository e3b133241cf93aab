#include "profile/measured_profile.hpp"

#include <map>

#include "core/protobuf_wire.hpp"
#include "profile/readers_common.hpp"

namespace podsim::profile {

using core::Wire;

MeasuredProfile read_chakra_et(const std::string& path, const std::string& data) {
    // MLCommons Chakra execution trace (schema et_def.proto): a stream of varint-length-prefixed
    // messages, GlobalMetadata then Node {id 1, name 2, type 3, duration_micros 7, attr 10}. GPU
    // work is the nodes whose attribute is_cpu_op is false; collectives carry comm_type and
    // comm_size. The trace has durations but no timeline: the step is the sum of GPU work.
    Wire stream(path, data, 0, data.size());
    std::map<std::string, MeasuredOp> ops;
    double busy = 0.0;
    bool first = true;
    while (!stream.done()) {
        Wire message = stream.sub();
        if (first) {
            first = false;  // GlobalMetadata
            continue;
        }
        std::string name;
        std::uint64_t type = 0;
        double duration_s = 0.0;
        bool cpu = true;
        std::int64_t comm_type = -1;
        double comm_bytes = 0.0;
        while (!message.done()) {
            auto [f, t] = message.key();
            if (f == 2 && t == 2) {
                name = message.bytes();
            } else if (f == 3 && t == 0) {
                type = message.varint();
            } else if (f == 7 && t == 0) {
                duration_s = static_cast<double>(message.varint()) * 1e-6;
            } else if (f == 10 && t == 2) {
                Wire attr = message.sub();
                std::string attr_name;
                std::uint64_t int_value = 0;
                bool has_int = false;
                while (!attr.done()) {
                    auto [af, at] = attr.key();
                    if (af == 1 && at == 2) {
                        attr_name = attr.bytes();
                    } else if ((af == 9 || af == 13 || af == 27 || af == 7 || af == 11) && at == 0) {
                        int_value = attr.varint();
                        has_int = true;
                    } else {
                        attr.skip(at);
                    }
                }
                if (attr_name == "is_cpu_op" && has_int) cpu = int_value != 0;
                if (attr_name == "comm_type" && has_int) comm_type = static_cast<std::int64_t>(int_value);
                if (attr_name == "comm_size" && has_int) comm_bytes = static_cast<double>(int_value);
            } else {
                message.skip(t);
            }
        }
        if (cpu || duration_s <= 0.0) continue;
        std::string category = classify_op(name);
        if (type == 7) {  // COMM_COLL_NODE: CollectiveCommType
            switch (comm_type) {
                case 0:
                    category = "all-reduce";
                    break;
                case 6:
                    category = "all-to-all";
                    break;
                case 7:
                case 8:
                    category = "reduce-scatter";
                    break;
                default:
                    category = "all-gather";
                    break;  // all-gather, gather, scatter, broadcast
            }
        }
        auto& op = ops[name];
        op.name = name;
        op.category = category;
        op.total_s += duration_s;
        op.bytes += comm_bytes;
        ++op.occurrences;
        busy += duration_s;
    }
    if (ops.empty()) profile_error(path, 0, "no GPU nodes with durations: not a Chakra execution trace");
    MeasuredProfile p;
    p.format = "chakra-et";
    p.device = "gpu";
    p.file = path;
    p.notes.push_back("Chakra traces have durations but no timeline: the step time is the sum of GPU work");
    return finish(std::move(p), ops, busy, busy);
}

}  // namespace podsim::profile
