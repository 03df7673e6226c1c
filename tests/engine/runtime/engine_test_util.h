// Helpers shared by the DecoderEngine tests.
#ifndef ATTNSERVE_TESTS_ENGINE_RUNTIME_ENGINE_TEST_UTIL_H_
#define ATTNSERVE_TESTS_ENGINE_RUNTIME_ENGINE_TEST_UTIL_H_

#include "engine/runtime/decoder_engine.h"

namespace attnserve::testing_util {

// Greedy decoding of exactly n tokens (EOS does not stop it).
inline GenerationParams Greedy(int n) {
  GenerationParams p;
  p.temperature = 0.0f;
  p.max_new_tokens = n;
  p.ignore_eos = true;
  return p;
}

}  // namespace attnserve::testing_util

#endif  // ATTNSERVE_TESTS_ENGINE_RUNTIME_ENGINE_TEST_UTIL_H_
