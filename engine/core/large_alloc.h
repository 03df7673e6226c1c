// Memory for large, long-lived buffers that decode streams end to end (the
// packed weights): 2 MiB aligned with transparent huge pages asked for.
//
// Why: decode reads every weight once per step. On 4 KiB pages the stream
// needs a new TLB entry (a page walk) every 4 KiB; one 2 MiB page needs one
// entry for 512 times as much. The same read loop gets 31-32 GB/s here on
// huge pages against 23-26 GB/s on 4 KiB pages (decoder_bench's STREAM).
// SmolLM-135M f32 decode (bench/decoder/decoder_bench, 2026-12-03 ~22:00
// UTC, three interleaved A/B rounds): 4 sequences 171-173 -> 183-184
// tokens/s; 1 and 16 sequences, and bf16 weights, level within the noise.
// The cost is at load, where the kernel clears each 2 MiB page as it is
// first touched: 538 MB of weights took 4-6 s instead of 1 s on this VM the
// first times, 1 s once its memory had been touched before.
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
