// Fuzz target for the GGUF reader and the decoder loading built on it.
// libFuzzer entry point; build with clang -fsanitize=fuzzer,address where
// available. Without clang, tests/engine/formats/gguf_fuzz_test.cc includes
// this file and drives it with a fixed-seed mutation loop over seed files.
//
// Whatever the bytes, the reader must return a status (never crash, hang or
// allocate beyond what the input can justify); when it accepts a file, every
// accessor and loader on it must be safe too.
#include <cstddef>
#include <cstdint>
#include <string>

#include "engine/formats/decoder_config.h"
#include "engine/formats/decoder_weights.h"
#include "engine/formats/gguf_file.h"

namespace attnserve::fuzz {

// Returns 1 when the input parsed as GGUF, 0 otherwise (for the driver's
// bookkeeping; libFuzzer ignores it).
inline int GgufFuzzOne(const uint8_t* data, size_t size) {
  absl::Span<const std::byte> image(reinterpret_cast<const std::byte*>(data), size);
  auto file = GgufFile::Parse(image, "fuzz.gguf");
  if (!file.ok()) return 0;
  const GgufFile& g = **file;
  for (const auto& [key, value] : g.metadata()) {
    (void)g.GetIntOr(key, 0);
    (void)g.GetFloatOr(key, 0);
    (void)g.GetStringOr(key, "");
    (void)value.array_size();
  }
  int64_t budget = int64_t{1} << 24;  // elements to dequantise in total
  for (const GgufTensorInfo& t : g.tensors()) {
    if (t.numel() > budget) continue;
    budget -= t.numel();
    (void)g.LoadTensor(t.name, DType::kF32);
  }
  auto config = DecoderConfigFromGguf(g);
  if (config.ok()) (void)LoadDecoderWeightsFromGguf(g, *config, DType::kBF16);
  return 1;
}

}  // namespace attnserve::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  attnserve::fuzz::GgufFuzzOne(data, size);
  return 0;
}
