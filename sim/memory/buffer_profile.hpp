#pragma once

#include "memory/memory_profile.hpp"
#include "parallel/device_program.hpp"
#include "scheduler/timeline.hpp"

namespace podsim::memory {

// The memory profile of a program that lists its buffers (parallel::DeviceProgram::buffers, an
// imported XLA module): each buffer is live from the start of its first op to the end of its last
// (the step's start or end where the program says so). At one instant buffers are freed before
// others are allocated, as XLA's heap simulator frees a buffer after its last use and before the
// next instruction's results. The peak op is the one whose results reached the peak.
MemoryProfile profile_buffers(const parallel::DeviceProgram& program, const scheduler::Timeline& timeline,
                              double capacity_bytes);

}  // namespace podsim::memory
