// Drives the tokenizers' fuzz body (tests/fuzz/tokenizer_fuzz_target.h)
// with a fixed-seed mutation loop: byte flips, insertions of UTF-8 fragments
// (whole and cut), deletions, truncations and splices. Bounded, so it runs in
// CI without libFuzzer; a broken round trip, an out-of-range id or streamed
// text that differs from the whole decode aborts the test binary.
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/fuzz/selector_edits.h"
#include "tests/fuzz/tokenizer_fuzz_target.h"

namespace attnserve::fuzz {
namespace {

const TokenizerFuzzSet& Set() {
  static const TokenizerFuzzSet* set = [] {
    absl::StatusOr<TokenizerFuzzSet> s = LoadTokenizerFuzzSet(ATTNSERVE_SOURCE_DIR, ATTNSERVE_SHARED_DIR);
    if (!s.ok()) {
      ADD_FAILURE() << s.status();
      return new TokenizerFuzzSet();
    }
    return new TokenizerFuzzSet(std::move(*s));
  }();
  return *set;
}

// Seeds for every selector byte 0..12 (tokenizer and mode); the encoder
// tokenizers' (6: WordPiece, 8: Unigram, 9: byte-level BPE, 10-12: the three
// with normalized added tokens) payload starts with its knobs byte.
std::vector<std::string> SeedCorpus() {
  const std::vector<std::string> texts = {
      "Once upon a time, there was a little girl named Lily.",
      "  two leading spaces\n\nand\ttabs\r\n 123 4567 89.0",
      "caf\xc3\xa9 na\xc3\xafve \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x98\x80\xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd",
      "<s></s><|endoftext|><unk> \xe2\x96\x81 <0x0A>",
      "\xef\xbd\x86\xef\xbd\x95 \xef\xac\x81 e\xcc\x81 \xef\xbc\xa1\xcc\x81  a <mask>  b\xe2\x80\x8b",
      std::string("nul\0inside", 10),
      "\xff\xfe invalid \xc3 \xe2\x82",
  };
  std::vector<std::string> corpus;
  for (int selector = 0; selector < 6; ++selector) {
    for (const std::string& text : texts) corpus.push_back(std::string(1, static_cast<char>(selector)) + text);
  }
  for (const char knobs : {'\x00', '\x01', '\x0b', '\x10'}) {  // none / special; max_length 5 / 8
    for (const std::string& text : texts) {
      corpus.push_back(std::string(1, '\x06') + knobs + text);
      corpus.push_back(std::string(1, '\x08') + knobs + text);
      for (const char selector : {'\x09', '\x0a', '\x0b', '\x0c'}) {
        corpus.push_back(std::string(1, selector) + knobs + text);
      }
    }
  }
  return corpus;
}

std::string Mutate(const std::string& in, const std::vector<std::string>& corpus, std::mt19937_64& rng) {
  static const char* kFragments[] = {" ",    "  ",   "\n",   "\xe2\x96\x81", "\xc3\xa9", "\xe6\x97\xa5", "\xf0\x9f\x98\x80",
                                     "\xf0", "\x9f", "\xe2", "\x80",         "<s>",      "</s>",         "0x",
                                     "'s",   "123",  "\t",   "\r\n",         "\xef\xbf\xbd", "\xe3\x80\x80<mask>",
                                     // The normalized added tokens' texts (\xc3\x89: É).
                                     "\xc3\x89" "cole", "[ENT]", "\xef\xac\x81" "sh", "hello world", "<ent>"};
  static const SelectorEditOptions kEdits{kFragments, sizeof(kFragments) / sizeof(kFragments[0]), /*selectors=*/13};
  std::string s = in;
  const int steps = 1 + static_cast<int>(rng() % 4);
  for (int k = 0; k < steps; ++k) {
    const size_t pos = SelectorEditPosition(s, rng);
    SelectorEdit(s, static_cast<int>(rng() % 8), pos, corpus, rng, kEdits);
  }
  return s;
}

TEST(TokenizerFuzzTest, LoadsOneTokenizerOfEachKind) {
  ASSERT_EQ(Set().tokenizers.size(), 3u);
  EXPECT_EQ(Set().tokenizers[0]->kind(), "sentencepiece_bpe");
  EXPECT_EQ(Set().tokenizers[1]->kind(), "hf_sentencepiece_bpe");
  EXPECT_EQ(Set().tokenizers[2]->kind(), "byte_level_bpe");
  EXPECT_NE(Set().wordpiece, nullptr);
  ASSERT_NE(Set().unigram, nullptr);
  EXPECT_EQ(Set().unigram->kind(), "unigram");
  ASSERT_NE(Set().bpe, nullptr);
  EXPECT_EQ(Set().bpe->kind(), "bpe");
  EXPECT_EQ(Set().with_normalized_added.size(), 3u);
}

TEST(TokenizerFuzzTest, FixedSeedMutationLoop) {
  const TokenizerFuzzSet& set = Set();
  ASSERT_EQ(set.tokenizers.size(), 3u);
  ASSERT_NE(set.wordpiece, nullptr);
  std::vector<std::string> corpus = SeedCorpus();
  for (const std::string& seed : corpus) TokenizerFuzzOne(set, reinterpret_cast<const uint8_t*>(seed.data()), seed.size());
  std::mt19937_64 rng(20261204);
  int encoded = 0, other = 0;
  constexpr int kIterations = 200000;
  for (int i = 0; i < kIterations; ++i) {
    const std::string input = Mutate(corpus[rng() % corpus.size()], corpus, rng);
    if (TokenizerFuzzOne(set, reinterpret_cast<const uint8_t*>(input.data()), input.size())) {
      ++encoded;
    } else {
      ++other;
    }
    if (corpus.size() < 256 && rng() % 8 == 0) corpus.push_back(input);
  }
  // Both the text mode's success path and the rest (ids mode, refused
  // invalid UTF-8) must be reached, or the mutator is not doing its job.
  EXPECT_GT(encoded, kIterations / 10);
  EXPECT_GT(other, kIterations / 10);
}

}  // namespace
}  // namespace attnserve::fuzz
