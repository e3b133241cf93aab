#include "workload/op.hpp"

#include "core/assert.hpp"

namespace podsim::workload {

Tensor Tensor::of(std::initializer_list<Extent> extents, int element_bytes) {
    PODSIM_ASSERT(extents.size() <= 4, "tensor rank above 4");
    Tensor t;
    for (const Extent& e : extents) t.dims[static_cast<std::size_t>(t.rank++)] = e;
    t.element_bytes = element_bytes;
    return t;
}

const char* phase_name(Phase phase) {
    switch (phase) {
        case Phase::forward:
            return "forward";
        case Phase::backward:
            return "backward";
        case Phase::recompute:
            return "recompute";
        case Phase::optimizer:
            return "optimizer";
    }
    return "?";
}

}  // namespace podsim::workload
