// Helpers shared by the decoder model tests: JSON fixtures, a one-prefill
// last-logits run and a plain greedy loop straight over
// DecoderModel::Forward (no engine, no sampling code).
#ifndef ATTNSERVE_TESTS_ENGINE_MODELS_DECODER_TEST_UTIL_H_
#define ATTNSERVE_TESTS_ENGINE_MODELS_DECODER_TEST_UTIL_H_

#include <algorithm>
#include <cmath>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/core/status_macros.h"
#include "engine/kv/kv_cache.h"
#include "engine/models/decoder_model.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace attnserve::testing_util {

inline nlohmann::json ReadJson(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
}

inline int32_t Argmax(const float* v, int n) {
  return static_cast<int32_t>(std::max_element(v, v + n) - v);
}

// Runs `prompt` through `model` as one prefill; returns the last logits.
inline std::vector<float> LastLogits(const DecoderModel& model, const std::vector<int32_t>& prompt) {
  KvCacheOptions opt;
  opt.kv_cache_bytes = model.description().kv_bytes_per_token * std::max<int64_t>(256, prompt.size() + 64);  // whole blocks
  auto kv = *KvCache::Create(model.kv_shape(), opt);
  EXPECT_TRUE(kv->AddSequence(1).ok());
  EXPECT_TRUE(kv->Reserve({1}, {static_cast<int>(prompt.size())}).ok());
  ForwardBatch batch;
  batch.Clear();
  batch.Add(1, prompt.data(), static_cast<int>(prompt.size()), 0);
  DecoderScratch scratch;
  std::vector<float> logits;
  absl::Status s = model.Forward(batch, *kv, scratch, logits);
  EXPECT_TRUE(s.ok()) << s;
  return logits;
}

inline float MaxAbsDiff(const std::vector<float>& a, const std::vector<float>& b) {
  EXPECT_EQ(a.size(), b.size());
  float worst = 0.0f;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) worst = std::max(worst, std::abs(a[i] - b[i]));
  return worst;
}

// Feeds `prompt` one token at a time through a paged cache of `block_size`
// blocks; returns the logits after each token (row t: position t).
inline absl::StatusOr<std::vector<std::vector<float>>> TokenByTokenLogits(const DecoderModel& model,
                                                                          const std::vector<int32_t>& prompt,
                                                                          int block_size) {
  KvCacheOptions opt;
  opt.block_size = block_size;
  opt.kv_cache_bytes = model.description().kv_bytes_per_token * (static_cast<int64_t>(prompt.size()) + block_size);
  ASSIGN_OR_RETURN(std::unique_ptr<KvCache> kv, KvCache::Create(model.kv_shape(), opt));
  RETURN_IF_ERROR(kv->AddSequence(1));
  DecoderScratch scratch;
  ForwardBatch batch;
  std::vector<std::vector<float>> rows(prompt.size());
  for (size_t t = 0; t < prompt.size(); ++t) {
    batch.Clear();
    batch.Add(1, &prompt[t], 1, static_cast<int>(t));
    RETURN_IF_ERROR(kv->Reserve({1}, {static_cast<int>(t) + 1}));
    RETURN_IF_ERROR(model.Forward(batch, *kv, scratch, rows[t]));
    RETURN_IF_ERROR(kv->Commit(1, absl::MakeConstSpan(&prompt[t], 1), true));
  }
  return rows;
}

// Feeds `prompt` in chunks of `chunk` tokens, then decodes `n` greedy tokens
// one at a time. Returns the new tokens.
inline absl::StatusOr<std::vector<int32_t>> GreedyOverModel(const DecoderModel& model,
                                                           const std::vector<int32_t>& prompt,
                                                           int n, int chunk = 1 << 20,
                                                           DType kv_dtype = DType::kF32) {
  KvCacheOptions opt;
  opt.dtype = kv_dtype;
  opt.kv_cache_bytes = model.description().kv_bytes_per_token * (prompt.size() + n + 64) *
                       (kv_dtype == model.description().kv_dtype ? 1 : 2);
  ASSIGN_OR_RETURN(std::unique_ptr<KvCache> kv, KvCache::Create(model.kv_shape(), opt));
  RETURN_IF_ERROR(kv->AddSequence(1));
  DecoderScratch scratch;
  std::vector<float> logits;
  ForwardBatch batch;
  const int vocab = model.config().vocab_size;
  int pos = 0;
  std::vector<int32_t> out;
  while (pos < static_cast<int>(prompt.size())) {
    const int len = std::min<int>(chunk, static_cast<int>(prompt.size()) - pos);
    batch.Clear();
    batch.Add(1, prompt.data() + pos, len, pos);
    RETURN_IF_ERROR(kv->Reserve({1}, {pos + len}));
    RETURN_IF_ERROR(model.Forward(batch, *kv, scratch, logits));
    RETURN_IF_ERROR(kv->Commit(1, absl::MakeConstSpan(prompt.data() + pos, len), true));
    pos += len;
  }
  for (int i = 0; i < n; ++i) {
    const int32_t tok = Argmax(logits.data(), vocab);
    out.push_back(tok);
    if (i + 1 == n) break;
    batch.Clear();
    batch.Add(1, &tok, 1, pos);
    RETURN_IF_ERROR(kv->Reserve({1}, {pos + 1}));
    RETURN_IF_ERROR(model.Forward(batch, *kv, scratch, logits));
    RETURN_IF_ERROR(kv->Commit(1, absl::MakeConstSpan(&tok, 1), false));
    ++pos;
  }
  return out;
}

}  // namespace attnserve::testing_util

#endif  // ATTNSERVE_TESTS_ENGINE_MODELS_DECODER_TEST_UTIL_H_
