// Restrictions on which tokens a draw may take, on stories260K:
// GenerationParams::allowed_token_ids (vLLM's): greedy decoding draws the
// best token among the allowed ones, the end-of-sequence token only if
// listed; with JSON mode, a token both allow. GenerationParams::bad_words
// (vLLM's): a banned word's last token is not drawn after the rest of it,
// the next best is.
#include <algorithm>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "engine/runtime/decoder_engine.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

std::shared_ptr<const DecoderModel> Stories() {
  static const std::shared_ptr<const DecoderModel> model = [] {
    auto m = DecoderModel::Load(ATTNSERVE_SHARED_DIR "/models/stories260K/stories260K.gguf", DecoderLoadOptions());
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? *m : nullptr;
  }();
  return model;
}

struct Output {
  std::vector<int32_t> ids;
  std::vector<SampledToken> logprobs;
  FinishReason reason = FinishReason::kNone;
};

Output Generate(const std::vector<int32_t>& prompt, const GenerationParams& p) {
  KvCacheOptions kv;
  kv.kv_cache_bytes = Stories()->description().kv_bytes_per_token * 1024;
  auto engine = DecoderEngine::Create(Stories(), kv);
  EXPECT_TRUE(engine.ok()) << engine.status();
  Output r;
  absl::Status st = GenerateOne(**engine, prompt, p, [&](const StepEvent& ev) {
    r.ids.insert(r.ids.end(), ev.token_ids.begin(), ev.token_ids.end());
    r.logprobs.insert(r.logprobs.end(), ev.logprobs.begin(), ev.logprobs.end());
    if (ev.finished) r.reason = ev.finish_reason;
    return true;
  });
  EXPECT_TRUE(st.ok()) << st;
  return r;
}

// Greedy decoding of `n` tokens, each reported with its `top` best
// alternatives.
GenerationParams GreedyScored(int n, int top) {
  GenerationParams p;
  p.temperature = 0.0f;
  p.max_new_tokens = n;
  p.logprobs = true;
  p.top_logprobs = top;
  return p;
}

TEST(AllowedTokenIdsTest, GreedyDrawsTheBestAllowedToken) {
  ASSERT_NE(Stories(), nullptr);
  auto prompt = Stories()->tokenizer().Encode("Once upon a time");
  ASSERT_TRUE(prompt.ok());
  GenerationParams p = GreedyScored(1, 5);
  const Output free = Generate(*prompt, p);
  ASSERT_EQ(free.logprobs.size(), 1u);
  ASSERT_EQ(free.logprobs[0].top.size(), 5u);
  // Only the third and fifth best: the third is drawn.
  const int32_t third = free.logprobs[0].top[2].id, fifth = free.logprobs[0].top[4].id;
  p.allowed_token_ids = {fifth, third};
  const Output held = Generate(*prompt, p);
  ASSERT_EQ(held.ids.size(), 1u);
  EXPECT_EQ(held.ids[0], third);
  // Its logprob is the model's, unchanged by the mask (as vLLM reports it).
  EXPECT_NEAR(held.logprobs[0].logprob, free.logprobs[0].top[2].logprob, 1e-5);

  // One allowed token, not the end: the output runs to max_new_tokens.
  p.max_new_tokens = 12;
  p.logprobs = false;
  p.top_logprobs = 0;
  p.allowed_token_ids = {third};
  const Output repeated = Generate(*prompt, p);
  EXPECT_EQ(repeated.ids, std::vector<int32_t>(12, third));
  EXPECT_EQ(repeated.reason, FinishReason::kLength);
  // With EOS listed too, it may end.
  const int32_t eos = Stories()->tokenizer().special().eos;
  p.allowed_token_ids = {eos};
  const Output ended = Generate(*prompt, p);
  EXPECT_EQ(ended.ids, std::vector<int32_t>{eos});
  EXPECT_EQ(ended.reason, FinishReason::kStop);
  // Only EOS allowed while min_tokens holds it back: every logit is -inf.
  // Sampled or greedy, the draw still ends the output, with nothing drawn
  // that was not allowed.
  p.min_tokens = 3;
  for (float temperature : {0.0f, 1.0f}) {
    p.temperature = temperature;
    const Output none = Generate(*prompt, p);
    for (int32_t id : none.ids) EXPECT_EQ(id, eos) << temperature;
    EXPECT_NE(none.reason, FinishReason::kNone) << temperature;
  }
}

TEST(AllowedTokenIdsTest, WithJsonModeATokenBothAllow) {
  ASSERT_NE(Stories(), nullptr);
  const Tokenizer& tok = Stories()->tokenizer();
  auto prompt = tok.Encode("Once upon a time");
  ASSERT_TRUE(prompt.ok());
  // "{", "}" and EOS: the one JSON object they can spell is "{}".
  std::vector<int32_t> ids;
  for (const char* piece : {"<0x7B>", "<0x7D>"}) {
    const std::optional<int32_t> id = tok.PieceToId(piece);
    ASSERT_TRUE(id.has_value()) << piece;
    ids.push_back(*id);
  }
  ids.push_back(tok.special().eos);
  GenerationParams p;
  p.temperature = 0.0f;
  p.max_new_tokens = 10;
  p.output_format = OutputFormat::kJsonObject;
  p.allowed_token_ids = ids;
  const Output run = Generate(*prompt, p);
  EXPECT_EQ(run.ids, (std::vector<int32_t>{ids[0], ids[1], ids[2]}));
  EXPECT_EQ(run.reason, FinishReason::kStop);
  // None of them can begin an object: nothing can be drawn, the output ends.
  p.allowed_token_ids = {ids[1]};
  const Output none = Generate(*prompt, p);
  EXPECT_TRUE(none.ids.empty());
  EXPECT_EQ(none.reason, FinishReason::kStop);
}

TEST(AllowedTokenIdsTest, RefusalsNameTheIdAndTheVocabulary) {
  ASSERT_NE(Stories(), nullptr);
  GenerationParams p;
  p.allowed_token_ids = {3, 512};
  EXPECT_EQ(ValidateGenerationParams(p, Stories()->description()).message(),
            "allowed_token_ids[1]: token id 512 is outside [0, 512)");
  p.allowed_token_ids = {-1};
  EXPECT_THAT(std::string(ValidateGenerationParams(p, Stories()->description()).message()),
              ::testing::HasSubstr("allowed_token_ids[0]: token id -1"));
  p.allowed_token_ids.assign(513, 1);
  EXPECT_EQ(ValidateGenerationParams(p, Stories()->description()).message(),
            "allowed_token_ids: 513 ids, at most the vocabulary's 512");
}

// The first k at which the greedy output's tokens k..k+n-1 are whole
// words (SentencePiece "▁word" pieces) and their text, stripped, encodes
// to exactly those tokens; -1 if none.
int WholeWordsAt(const std::vector<int32_t>& ids, size_t n, std::string* word) {
  const Tokenizer& tok = Stories()->tokenizer();
  TokenizeOptions plain;
  plain.add_bos = false;
  for (size_t k = 0; k + n <= ids.size(); ++k) {
    std::string text;
    bool words = true;
    for (size_t j = k; j < k + n && words; ++j) {
      const std::string piece = tok.IdToPiece(ids[j]);
      words = piece.rfind("\xe2\x96\x81", 0) == 0 && piece.size() > 4;  // "▁" and a letter or more
      if (words) text += (j == k ? "" : " ") + piece.substr(3);
    }
    if (!words) continue;
    auto encoded = tok.Encode(text, plain);
    if (encoded.ok() && std::equal(encoded->begin(), encoded->end(), ids.begin() + k, ids.begin() + k + n) &&
        encoded->size() == n) {
      *word = text;
      return static_cast<int>(k);
    }
  }
  return -1;
}

TEST(BadWordsTest, ABannedWordsLastTokenGivesWayToTheNextBest) {
  ASSERT_NE(Stories(), nullptr);
  auto prompt = Stories()->tokenizer().Encode("Once upon a time");
  ASSERT_TRUE(prompt.ok());
  const GenerationParams p = GreedyScored(40, 2);
  const Output plain = Generate(*prompt, p);
  for (size_t n : {1u, 2u}) {
    std::string word;
    const int k = WholeWordsAt(plain.ids, n, &word);
    ASSERT_GE(k, 0) << "no " << n << "-word run in the story";
    const size_t last = static_cast<size_t>(k) + n - 1;  // where the word would end
    GenerationParams banned = p;
    banned.bad_words = {"  " + word};  // leading spaces do not count
    const Output run = Generate(*prompt, banned);
    ASSERT_GT(run.ids.size(), last) << word;
    // The same story up to the word's last token, then the next best there.
    EXPECT_EQ(std::vector<int32_t>(run.ids.begin(), run.ids.begin() + last),
              std::vector<int32_t>(plain.ids.begin(), plain.ids.begin() + last))
        << word;
    ASSERT_EQ(plain.logprobs[last].top[0].id, plain.ids[last]);
    EXPECT_EQ(run.ids[last], plain.logprobs[last].top[1].id) << word;
    // Nowhere does the output spell the word.
    for (size_t j = n - 1; j < run.ids.size(); ++j) {
      EXPECT_FALSE(std::equal(plain.ids.begin() + k, plain.ids.begin() + k + n, run.ids.begin() + (j + 1 - n)))
          << word << " at " << j;
    }
  }
  GenerationParams bad = p;
  bad.bad_words = {" "};
  EXPECT_THAT(std::string(ValidateGenerationParams(bad, Stories()->description()).message()),
              ::testing::HasSubstr("bad_words[0] must be 1..256 bytes, not only spaces"));
}

}  // namespace
}  // namespace attnserve
