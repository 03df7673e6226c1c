// The checks the encoder tokenizer tests run on their golden fixtures
// (tools/golden/*): ids, byte offsets and decoding of single texts, ids and
// segments of pairs, and refusals of damaged tokenizer.json files.
#ifndef ATTNSERVE_TESTS_ENGINE_TOKENIZERS_TOKENIZER_GOLDEN_CHECKS_H_
#define ATTNSERVE_TESTS_ENGINE_TOKENIZERS_TOKENIZER_GOLDEN_CHECKS_H_

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/tokenizers/encoder_tokenizer.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace attnserve::testing_util {

// A golden case's [[begin, end], ...] byte offsets.
inline std::vector<std::pair<uint32_t, uint32_t>> GoldenOffsets(const nlohmann::json& list) {
  std::vector<std::pair<uint32_t, uint32_t>> offsets;
  for (const nlohmann::json& o : list) offsets.emplace_back(o[0].get<uint32_t>(), o[1].get<uint32_t>());
  return offsets;
}

// Each case {text, ids, offsets[, decoded, decoded_skip_special]} encoded
// with the special tokens; decoding checked where the case has it.
inline void ExpectGoldenEncodings(const EncoderTokenizer& tok, const nlohmann::json& cases) {
  using ::testing::ElementsAreArray;
  for (const nlohmann::json& c : cases) {
    const std::string text = c["text"].get<std::string>();
    auto enc = tok.Encode(text, /*add_special_tokens=*/true);
    ASSERT_TRUE(enc.ok()) << enc.status();
    EXPECT_THAT(enc->ids, ElementsAreArray(c["ids"].get<std::vector<int32_t>>())) << text;
    EXPECT_THAT(enc->offsets, ElementsAreArray(GoldenOffsets(c["offsets"]))) << text;
    if (!c.contains("decoded")) continue;
    auto decoded = tok.Decode(enc->ids, /*skip_special_tokens=*/false);
    ASSERT_TRUE(decoded.ok());
    EXPECT_EQ(*decoded, c["decoded"].get<std::string>()) << text;
    auto skipped = tok.Decode(enc->ids, /*skip_special_tokens=*/true);
    ASSERT_TRUE(skipped.ok());
    EXPECT_EQ(*skipped, c["decoded_skip_special"].get<std::string>()) << text;
  }
}

// Each pair {text, text_pair, max_length, ids, type_ids}; returns how many
// were truncated.
inline int ExpectGoldenPairs(const EncoderTokenizer& tok, const nlohmann::json& pairs) {
  using ::testing::ElementsAreArray;
  int truncated = 0;
  for (const nlohmann::json& c : pairs) {
    auto enc = tok.EncodePair(c["text"].get<std::string>(), c["text_pair"].get<std::string>(),
                              c["max_length"].get<int>());
    EXPECT_TRUE(enc.ok()) << enc.status();
    if (!enc.ok()) continue;
    EXPECT_THAT(enc->ids, ElementsAreArray(c["ids"].get<std::vector<int32_t>>())) << c["text"];
    EXPECT_THAT(enc->type_ids, ElementsAreArray(c["type_ids"].get<std::vector<int32_t>>())) << c["text"];
    EXPECT_LE(static_cast<int>(enc->ids.size()), c["max_length"].get<int>());
    truncated += enc->truncated;
  }
  return truncated;
}

// A damaged copy of a tokenizer.json and the words its refusal must hold.
struct TokenizerDamage {
  const char* what;
  std::function<void(nlohmann::json&)> damage;
  const char* message;
};

// Each damage refused with INVALID_ARGUMENT naming dir/tokenizer.json and
// the message.
inline void ExpectRefusals(const nlohmann::json& base, const std::vector<TokenizerDamage>& damages) {
  for (const TokenizerDamage& d : damages) {
    nlohmann::json j = base;
    d.damage(j);
    auto tok = EncoderTokenizerFromJson(j, "dir/tokenizer.json");
    ASSERT_FALSE(tok.ok()) << d.what;
    EXPECT_EQ(tok.status().code(), absl::StatusCode::kInvalidArgument) << d.what;
    EXPECT_THAT(tok.status().message(), ::testing::HasSubstr("dir/tokenizer.json")) << d.what;
    EXPECT_THAT(tok.status().message(), ::testing::HasSubstr(d.message)) << d.what;
  }
}

}  // namespace attnserve::testing_util

#endif  // ATTNSERVE_TESTS_ENGINE_TOKENIZERS_TOKENIZER_GOLDEN_CHECKS_H_
