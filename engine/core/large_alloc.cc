#include "engine/core/large_alloc.h"

#include <sys/mman.h>

#include <cstdlib>

namespace attnserve {

size_t HugePageAdvisedBytes(size_t bytes) { return bytes / kHugePageBytes * kHugePageBytes; }

void* AllocateLarge(size_t bytes) {
  if (bytes == 0) bytes = 1;
  if (bytes < kHugePageBytes) {
    return std::aligned_alloc(64, (bytes + 63) / 64 * 64);  // size a multiple of the alignment
  }
  const size_t rounded = (bytes + kHugePageBytes - 1) / kHugePageBytes * kHugePageBytes;
  void* p = std::aligned_alloc(kHugePageBytes, rounded);
  if (p == nullptr) return nullptr;
  // Advice only: on failure (THP compiled out, an old kernel) the buffer is
  // still good, on small pages.
  (void)madvise(p, HugePageAdvisedBytes(bytes), MADV_HUGEPAGE);
  return p;
}

}  // namespace attnserve
