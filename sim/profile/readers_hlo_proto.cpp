#include <cstdint>

#include <fmt/format.h>

#include "core/protobuf_wire.hpp"
#include "profile/measured_profile.hpp"

namespace podsim::profile {

using core::Wire;

MeasuredProfile read_hlo_proto(const std::string& path, const std::string& data) {
    // xla.HloProto (xla/service/hlo.proto), as --xla_dump_hlo_as_proto writes a compiled module:
    // hlo_module 1 (HloModuleProto: name 1), buffer_assignment 3 (BufferAssignmentProto:
    // buffer_allocations 3). A BufferAllocationProto has size 2, is_thread_local 3,
    // is_entry_computation_parameter 5, maybe_live_out 7, is_constant 12: the device memory XLA
    // reserves for one execution on one device, by what it holds.
    MeasuredProfile p;
    p.format = "hlo-proto";
    p.file = path;
    XlaMemory memory;
    bool has_assignment = false;
    Wire top(path, data, 0, data.size());
    while (!top.done()) {
        auto [field, type] = top.key();
        if (field == 1 && type == 2) {
            Wire module = top.sub();
            while (!module.done()) {
                auto [f, t] = module.key();
                if (f == 1 && t == 2) {
                    memory.module = module.bytes();
                } else {
                    module.skip(t);
                }
            }
        } else if (field == 3 && type == 2) {
            has_assignment = true;
            Wire assignment = top.sub();
            while (!assignment.done()) {
                auto [f, t] = assignment.key();
                if (f != 3 || t != 2) {
                    assignment.skip(t);
                    continue;
                }
                Wire allocation = assignment.sub();
                std::uint64_t size = 0;
                bool thread_local_buffer = false, parameter = false, live_out = false, constant = false;
                while (!allocation.done()) {
                    auto [af, at] = allocation.key();
                    if (at != 0) {
                        allocation.skip(at);
                        continue;
                    }
                    const std::uint64_t v = allocation.varint();
                    if (af == 2) size = v;
                    if (af == 3) thread_local_buffer = v != 0;
                    if (af == 5) parameter = v != 0;
                    if (af == 7) live_out = v != 0;
                    if (af == 12) constant = v != 0;
                }
                const auto bytes = static_cast<double>(size);
                ++memory.allocations;
                if (thread_local_buffer) continue;  // on-chip scratch, not device memory
                if (parameter) {
                    memory.parameter_bytes += bytes;
                } else if (constant) {
                    memory.constant_bytes += bytes;
                } else if (live_out) {
                    memory.output_bytes += bytes;
                } else {
                    memory.temp_bytes += bytes;
                }
            }
        } else {
            top.skip(type);
        }
    }
    if (!has_assignment)
        profile_error(path, 0,
                      "an HloProto without a buffer assignment: dump the module after optimizations "
                      "(XLA_FLAGS=--xla_dump_hlo_as_proto --xla_dump_to=DIR, the *after_optimizations.hlo.pb "
                      "file)");
    // GPU programs call cuBLAS and cuDNN by custom-call target names.
    if (data.find("__cublas$") != std::string::npos || data.find("__cudnn$") != std::string::npos)
        p.device = "gpu";
    p.notes.push_back(
        fmt::format("a compiled XLA module ({}): its buffer assignment gives memory per device, no timings",
                    memory.module));
    p.xla_memory = memory;
    return p;
}

}  // namespace podsim::profile
