#pragma once

namespace podsim::core {

// For podsim's own executables, before they simulate (the library never calls it). A big config's
// single run spent most of its time in page faults: the slow 16x16x16 175B config touched 5,120
// fresh 4 KiB pages, at about 10 us each on the 2-core development VM, for 120 ms of process time
// against about 40 ms of work. This keeps freed memory in the process for reuse and, with
// `huge_pages`, backs the main thread's heap with transparent huge pages (madvise, as glibc's
// glibc.malloc.hugetlb=1 tunable does), which took that run to 20-30 ms and 300-700 page faults.
// A sweep simulates in worker threads, whose arenas the huge pages do not reach; its main heap holds
// rows and rankings, where 2 MiB pages would only round resident memory up. A no-op without glibc
// or MADV_HUGEPAGE, and harmless where the kernel refuses: only speed depends on it.
void configure_process_heap(bool huge_pages);

}  // namespace podsim::core
