#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace podsim::hlo {

// XLA's buffer assignment of a compiled module (BufferAssignmentProto in xla/service/hlo.proto): the
// allocations one execution reserves on one device and the heap simulator's trace of the buffers
// that share the temporary allocations.
struct BufferAssignment {
    struct Allocation {
        std::int64_t index = 0;
        std::int64_t size = 0;
        std::int64_t color = 0;  // memory space: 0 is device memory
        bool is_thread_local = false;
        bool is_tuple = false;
        bool is_entry_parameter = false;
        bool is_constant = false;
        bool maybe_live_out = false;
        std::int64_t parameter_number = -1;
    };
    enum class EventKind : std::uint8_t { alloc = 0, free = 1, share_with = 2 };
    struct Event {
        EventKind kind = EventKind::alloc;
        std::int64_t buffer = 0;
        std::int64_t share_with = 0;
    };
    struct Trace {
        std::int64_t allocation = -1;
        std::vector<Event> events;
    };

    std::vector<Allocation> allocations;
    std::unordered_map<std::int64_t, std::int64_t> logical_buffer_size;  // logical buffer id -> bytes
    std::vector<Trace> traces;

    // What XLA's CompiledMemoryStats reports (xla/service/compiler.cc and the GPU compiler's
    // GetCompiledMemoryStats): the allocations held for the whole execution (entry parameters,
    // constants, outputs that may live out), and the live bytes of the temporary allocations at their
    // heap simulator's peak; their sum is peak_memory_in_bytes.
    double indefinite_bytes() const;
    double heap_peak_bytes() const;
    double peak_bytes() const { return indefinite_bytes() + heap_peak_bytes(); }
    double parameter_bytes() const;
    double temp_bytes() const;  // the temporary allocations' sizes (temp_size_in_bytes)
};

}  // namespace podsim::hlo
