// libFuzzer entry point for the safetensors header parser. Build with clang:
//   clang++ -std=c++20 -fsanitize=fuzzer,address -I. tests/fuzz/safetensors_fuzz.cc \
//     engine/formats/safetensors.cc engine/formats/json_util.cc engine/core/tensor.cc -labsl_...
// Seeds: tests/fuzz/safetensors_corpus/. Without clang the same body runs in
// tests/engine/formats/safetensors_fuzz_test.cc with a fixed-seed mutator.
#include <cstddef>
#include <cstdint>

#include "tests/fuzz/safetensors_fuzz_target.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  attnserve::SafetensorsFuzzOne(data, size);
  return 0;
}
