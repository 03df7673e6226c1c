// Memory for large, long-lived buffers that decode streams end to end (the
// packed weights): 2 MiB aligned with transparent huge pages asked for.
//
// Why: decode reads every weight once per step. On 4 KiB pages that is a new
// page (a TLB miss, and a stop for the hardware prefetchers, which do not
// cross 4 KiB) every 4 KiB; on 2 MiB pages the stream runs unbroken.
// SmolLM-135M f32 decode (bench/decoder, 2026-12-03 ~22:40 UTC, A/B back to
// back): 1 / 4 / 8 / 16 sequences 45 / 169 / 307 / 501 -> 48 / 192 / 338 /
// 523 tokens/s. The cost is at load: the kernel clears each 2 MiB page as it
// is first touched (538 MB of weights: 1.0 -> 4-6 s on this VM).
#ifndef ATTNSERVE_ENGINE_CORE_LARGE_ALLOC_H_
#define ATTNSERVE_ENGINE_CORE_LARGE_ALLOC_H_

#include <cstddef>

namespace attnserve {

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

// `bytes` of uninitialised memory, or nullptr if there is none; release with
// std::free. Below kHugePageBytes: 64-byte aligned, nothing more. From
// kHugePageBytes up: 2 MiB aligned, and madvise(MADV_HUGEPAGE) over the whole
// 2 MiB pages inside the `bytes` (not a partial last one, which would be
// backed by a full huge page beyond what was asked for). Where the kernel has
// transparent huge pages off, or refuses the advice, the memory is the same,
// on small pages.
void* AllocateLarge(size_t bytes);

// How many bytes from the start of an AllocateLarge(bytes) buffer are
// advised for huge pages: its whole 2 MiB pages (0 below kHugePageBytes).
size_t HugePageAdvisedBytes(size_t bytes);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_CORE_LARGE_ALLOC_H_
