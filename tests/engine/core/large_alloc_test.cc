#include "engine/core/large_alloc.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "gtest/gtest.h"

namespace attnserve {
namespace {

// The kernel's transparent huge page mode: "always", "madvise" or "never"
// (the bracketed word of /sys/kernel/mm/transparent_hugepage/enabled), or
// empty where the file is missing.
std::string ThpMode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string line;
  std::getline(f, line);
  const size_t a = line.find('['), b = line.find(']');
  return a == std::string::npos || b == std::string::npos ? "" : line.substr(a + 1, b - a - 1);
}

// THPeligible of the mapping that holds `addr`, from /proc/self/smaps.
std::optional<int> ThpEligible(const void* addr) {
  const auto a = reinterpret_cast<uintptr_t>(addr);
  std::ifstream f("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(f, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-') {
      inside = lo <= a && a < hi;
      continue;
    }
    if (inside && line.rfind("THPeligible:", 0) == 0) return std::atoi(line.c_str() + 12);
  }
  return std::nullopt;
}

TEST(LargeAllocTest, SmallBuffersAre64ByteAligned) {
  for (size_t bytes : {size_t{1}, size_t{100}, size_t{4096}, kHugePageBytes - 1}) {
    void* p = AllocateLarge(bytes);
    ASSERT_NE(p, nullptr) << bytes;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u) << bytes;
    std::memset(p, 0xab, bytes);  // the whole size is usable (ASan checks it)
    EXPECT_EQ(HugePageAdvisedBytes(bytes), 0u) << bytes;
    std::free(p);
  }
}

TEST(LargeAllocTest, LargeBuffersAreHugePageAlignedAndAdvisedOverWholePages) {
  const size_t bytes = 2 * kHugePageBytes + 12345;
  EXPECT_EQ(HugePageAdvisedBytes(bytes), 2 * kHugePageBytes);
  EXPECT_EQ(HugePageAdvisedBytes(kHugePageBytes), kHugePageBytes);
  char* p = static_cast<char*>(AllocateLarge(bytes));
  ASSERT_NE(p, nullptr);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % kHugePageBytes, 0u);
  std::memset(p, 0xcd, bytes);
  EXPECT_EQ(static_cast<unsigned char>(p[bytes - 1]), 0xcd);

  const std::string mode = ThpMode();
  if (mode == "madvise" || mode == "always") {
    // The advice took: the whole pages are eligible for huge pages.
    EXPECT_EQ(ThpEligible(p), 1);
    EXPECT_EQ(ThpEligible(p + 2 * kHugePageBytes - 1), 1);
    // In madvise mode the partial last page is not: a huge page there would
    // be resident beyond what was asked for.
    if (mode == "madvise") {
      EXPECT_EQ(ThpEligible(p + 2 * kHugePageBytes), 0);
    }
  }
  std::free(p);
  if (mode != "madvise" && mode != "always") {
    GTEST_SKIP() << "transparent huge pages are '" << mode
                 << "' on this kernel: alignment checked, the huge page advice cannot be";
  }
}

}  // namespace
}  // namespace attnserve
