// The safetensors header parser's fuzz body, shared by the libFuzzer entry
// point (safetensors_fuzz.cc, for clang -fsanitize=fuzzer builds) and the
// gtest that drives it with a fixed-seed mutation loop (GCC has no libFuzzer).
// Contract checked: any input either parses into tensors whose spans lie
// inside the input and match their shape x dtype, or fails with a Status.
#ifndef ATTNSERVE_TESTS_FUZZ_SAFETENSORS_FUZZ_TARGET_H_
#define ATTNSERVE_TESTS_FUZZ_SAFETENSORS_FUZZ_TARGET_H_

#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "absl/types/span.h"
#include "engine/core/tensor.h"
#include "engine/formats/safetensors.h"

namespace attnserve {

// Returns true when the input parsed (for coverage statistics in the gtest).
inline bool SafetensorsFuzzOne(const uint8_t* data, size_t size) {
  absl::Span<const std::byte> image(reinterpret_cast<const std::byte*>(data), size);
  auto parsed = ParseSafetensors(image, "fuzz");
  if (!parsed.ok()) return false;
  for (const SafetensorsTensor& t : *parsed) {
    const std::byte* begin = image.data();
    const std::byte* end = image.data() + image.size();
    if (t.data.size() > 0 && (t.data.data() < begin || t.data.data() + t.data.size() > end)) std::abort();
    if (t.dtype.has_value() && static_cast<size_t>(t.numel()) * DTypeSize(*t.dtype) != t.data.size()) std::abort();
    // Touch every byte so a sanitizer catches out-of-bounds spans.
    volatile uint8_t sink = 0;
    for (std::byte b : t.data) sink ^= static_cast<uint8_t>(b);
    (void)sink;
  }
  return true;
}

}  // namespace attnserve

#endif  // ATTNSERVE_TESTS_FUZZ_SAFETENSORS_FUZZ_TARGET_H_
