#include "core/process_heap.hpp"

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace podsim::core {

void configure_process_heap(bool huge_pages) {
#if defined(__GLIBC__) && defined(MADV_HUGEPAGE)
    constexpr std::uintptr_t kHugePage = std::uintptr_t{2} << 20;
    // Arrays up to 32 MiB (the most glibc accepts, half its 64 MiB heap size) come from the heap, not
    // from fresh mmaps, and freed memory is not handed back: the next config reuses its pages.
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    if (!huge_pages) return;
    // The heap grows 256 MiB of address space at a time (pages are only backed when touched), so
    // one madvise below covers what a big run uses: the kernel does not carry the advice over to
    // later growth.
    mallopt(M_TOP_PAD, 256 << 20);
    void* block = std::malloc(std::size_t{8} << 20);  // grows the heap by the top pad
    if (block == nullptr) return;
    const auto start = (reinterpret_cast<std::uintptr_t>(block) + kHugePage - 1) & ~(kHugePage - 1);
    void* top = sbrk(0);
    const auto end = reinterpret_cast<std::uintptr_t>(top) & ~(kHugePage - 1);
    // Only when the block came from the heap just grown (not from an mmap, where sbrk failed).
    if (top != reinterpret_cast<void*>(-1) && start < end && end - start <= (std::uintptr_t{1} << 30))
        madvise(reinterpret_cast<void*>(start), end - start, MADV_HUGEPAGE);
    std::free(block);
#endif
}

}  // namespace podsim::core
