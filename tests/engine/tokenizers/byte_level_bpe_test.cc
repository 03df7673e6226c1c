#include "engine/tokenizers/byte_level_bpe.h"

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/formats/decoder_config.h"
#include "engine/formats/gguf_file.h"
#include "engine/formats/hf_config.h"
#include "engine/tokenizers/pretokenizer.h"
#include "engine/tokenizers/tokenizer_factory.h"
#include "engine/tokenizers/unicode_util.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

using ::testing::ElementsAre;

const std::string kModels = std::string(ATTNSERVE_SOURCE_DIR) + "/tests/golden/decoder_models/";
const std::string kGolden = std::string(ATTNSERVE_SOURCE_DIR) + "/tests/golden/decoder_tokenizers/";

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

std::unique_ptr<Tokenizer> FromHf(const std::string& name) {
  auto hf = HfConfig::Read(kModels + name);
  EXPECT_TRUE(hf.ok()) << hf.status();
  auto c = DecoderConfigFromHf(*hf);
  EXPECT_TRUE(c.ok()) << c.status();
  auto t = TokenizerFromHfJson(kModels + name + "/tokenizer.json", c->bos_token_id, c->eos_token_id);
  EXPECT_TRUE(t.ok()) << t.status();
  return std::move(*t);
}

std::unique_ptr<Tokenizer> FromGguf(const std::string& name) {
  auto g = GgufFile::Open(kModels + name + "/model.gguf");
  EXPECT_TRUE(g.ok()) << g.status();
  auto t = TokenizerFromGguf(**g);
  EXPECT_TRUE(t.ok()) << t.status();
  return std::move(*t);
}

class ByteLevelGoldenTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ByteLevelGoldenTest, IdsAndTextMatchHfTokenizers) {
  const std::string name = GetParam();
  nlohmann::json golden = nlohmann::json::parse(ReadFile(kGolden + name + ".json"));
  ASSERT_GE(golden["cases"].size(), 20u);
  for (const auto& tok : {FromHf(name), FromGguf(name)}) {
    ASSERT_EQ(tok->kind(), "byte_level_bpe");
    for (const auto& c : golden["cases"]) {
      const std::string text = c["text"];
      TokenizeOptions plain;
      plain.add_bos = false;
      plain.add_eos = false;
      auto ids = tok->Encode(text, plain);
      ASSERT_TRUE(ids.ok()) << ids.status();
      EXPECT_EQ(*ids, c["ids"].get<std::vector<int32_t>>()) << name << ": '" << text << "'";
      auto with = tok->Encode(text);
      ASSERT_TRUE(with.ok());
      EXPECT_EQ(*with, c["ids_with_special"].get<std::vector<int32_t>>()) << name << " (special): '" << text << "'";
      auto back = tok->Decode(*ids);
      ASSERT_TRUE(back.ok());
      EXPECT_EQ(*back, c["decoded"].get<std::string>()) << name;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(TinyModels, ByteLevelGoldenTest, ::testing::Values("llama_tiny", "qwen2_tiny", "gpt2_tiny"));

// tokenizer.json layouts of their own (tools/golden/decoder_tokenizer_golden.py):
// smollm, a Digits(individual) split before the byte-level regex; o200k,
// GPT-4o's Split regex (Phi-4-mini's layout) before ByteLevel without its
// own. The pre-tokenizer is recognised and ids and decodings equal HF's.
class HfJsonLayoutTest : public ::testing::TestWithParam<std::string> {};

TEST_P(HfJsonLayoutTest, IdsAndDecodingMatchHf) {
  nlohmann::json golden = nlohmann::json::parse(ReadFile(kGolden + GetParam() + ".json"));
  auto tok = TokenizerFromHfJson(kGolden + GetParam() + "_tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status();
  ASSERT_GE(golden["cases"].size(), 20u);
  for (const auto& c : golden["cases"]) {
    const std::string text = c["text"];
    auto ids = (*tok)->Encode(text, TokenizeOptions{false, false, true});
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*ids, c["ids"].get<std::vector<int32_t>>()) << "'" << text << "'";
    EXPECT_EQ(*(*tok)->Decode(*ids), c["decoded"].get<std::string>());
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, HfJsonLayoutTest, ::testing::Values("smollm", "o200k"));

// lstrip / rstrip special tokens (tools/golden/decoder_tokenizer_golden.py:
// llama_tiny's tokenizer with <|eot_id|> rstrip and <|start_header_id|>
// lstrip): the whitespace beside them is theirs, as HF tokenizers has it.
TEST(ByteLevelBpeTest, StripFlagsOfAddedTokensMatchHf) {
  nlohmann::json golden = nlohmann::json::parse(ReadFile(kGolden + "llama_strip.json"));
  auto tok = TokenizerFromHfJson(kGolden + "llama_strip_tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status();
  int with_markers = 0;
  for (const auto& c : golden["cases"]) {
    const std::string text = c["text"];
    auto ids = (*tok)->Encode(text, TokenizeOptions{false, false, true});
    ASSERT_TRUE(ids.ok());
    EXPECT_EQ(*ids, c["ids"].get<std::vector<int32_t>>()) << "'" << text << "'";
    with_markers += text.find("<|eot_id|>") != std::string::npos || text.find("<|start_header") != std::string::npos;
  }
  EXPECT_EQ(with_markers, 6);
}

// GPT-4o's regex (o200k_base: Phi-4-mini) against HF tokenizers' regex
// engine (tools/golden/o200k_pretokenizer_golden.py): 35 hand-written texts
// and 1,500 random ones over every character class the regex tells apart
// (upper / lower / modifier / other / title-case letters, marks, numbers,
// contractions, "/", newlines, Unicode spaces), cut into the same pieces.
TEST(PretokenizerTest, O200kSplitsAsHfTokenizers) {
  nlohmann::json golden = nlohmann::json::parse(ReadFile(kGolden + "o200k_splits.json"));
  EXPECT_EQ(PretokenizerFromRegex(golden["regex"].get<std::string>()), PretokenizerKind::kO200k);
  EXPECT_EQ(PretokenizerFromGgufPre("gpt-4o"), PretokenizerKind::kO200k);
  ASSERT_GE(golden["cases"].size(), 1500u);
  int wrong = 0;
  for (const auto& c : golden["cases"]) {
    const std::string text = c["text"];
    std::vector<std::string> got;
    for (absl::string_view piece : Pretokenize(text, PretokenizerKind::kO200k)) got.emplace_back(piece);
    const auto want = c["pieces"].get<std::vector<std::string>>();
    if (got != want && ++wrong <= 5) ADD_FAILURE() << "'" << text << "': " << ::testing::PrintToString(got);
  }
  EXPECT_EQ(wrong, 0);
}

TEST(PretokenizerTest, RegexAlternativesByHand) {
  auto split = [](const std::string& s, PretokenizerKind k) {
    std::vector<std::string> out;
    for (absl::string_view p : Pretokenize(s, k)) out.emplace_back(p);
    return out;
  };
  // \s+(?!\S): the last space of a run goes with the next word.
  EXPECT_THAT(split("a   b", PretokenizerKind::kGpt2), ElementsAre("a", "  ", " b"));
  EXPECT_THAT(split("a   ", PretokenizerKind::kGpt2), ElementsAre("a", "   "));
  EXPECT_THAT(split("I'm 12345", PretokenizerKind::kGpt2), ElementsAre("I", "'m", " 12345"));
  EXPECT_THAT(split("I'M 12345", PretokenizerKind::kGpt2), ElementsAre("I", "'", "M", " 12345"));
  // Llama 3: case-insensitive contractions, digits in threes, \s*[\r\n]+.
  EXPECT_THAT(split("I'M 12345", PretokenizerKind::kLlama3), ElementsAre("I", "'M", " ", "123", "45"));
  EXPECT_THAT(split("x \n\n y", PretokenizerKind::kLlama3), ElementsAre("x", " \n\n", " y"));
  EXPECT_THAT(split("12345", PretokenizerKind::kQwen2), ElementsAre("1", "2", "3", "4", "5"));
  EXPECT_THAT(split("(hi)", PretokenizerKind::kLlama3), ElementsAre("(hi", ")"));
  EXPECT_THAT(split("ab 123x", PretokenizerKind::kSmolLM), ElementsAre("ab", " ", "1", "2", "3", "x"));
  EXPECT_EQ(PretokenizerFromRegex(PretokenizerRegex(PretokenizerKind::kQwen2)), PretokenizerKind::kQwen2);
  EXPECT_EQ(PretokenizerFromGgufPre("llama-bpe"), PretokenizerKind::kLlama3);
  EXPECT_FALSE(PretokenizerFromGgufPre("deepseek-coder").has_value());
  // Invalid UTF-8 is kept, byte for byte.
  std::string bad = "a\xff\xfe b";
  std::string joined;
  for (const std::string& p : split(bad, PretokenizerKind::kLlama3)) joined += p;
  EXPECT_EQ(joined, bad);
}

TEST(ByteLevelBpeTest, ByteMapAndPartialUtf8Tokens) {
  EXPECT_EQ(ByteToUnicode(' '), "Ġ");
  EXPECT_EQ(ByteToUnicode('\n'), "Ċ");
  EXPECT_EQ(ByteToUnicode('a'), "a");
  auto tok = FromHf("gpt2_tiny");
  // An emoji not in the merges splits into byte tokens whose bytes only make
  // sense together: each token alone is not valid UTF-8.
  auto ids = tok->Encode("😀", TokenizeOptions{false, false, true});
  ASSERT_TRUE(ids.ok());
  std::string joined;
  for (int32_t id : *ids) joined += tok->TokenBytes(id, -1);
  EXPECT_EQ(joined, "😀");
  EXPECT_TRUE(tok->IsControl(*tok->PieceToId("<|endoftext|>")));
  EXPECT_EQ(tok->TokenBytes(*tok->PieceToId("<|endoftext|>"), -1), "");
  EXPECT_EQ(tok->TokenBytes(*tok->PieceToId("<|custom|>"), -1), "<|custom|>");
}

TEST(ByteLevelBpeTest, UnsupportedTokenizerJsonFailsWithReason) {
  const std::string dir = ::testing::TempDir();
  const std::string path = dir + "/tok.json";
  std::ofstream(path) << R"({"model": {"type": "WordPiece", "vocab": {}}})";
  auto s = TokenizerFromHfJson(path).status();
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("WordPiece"));
  std::ofstream(path, std::ios::trunc) << R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []},
    "pre_tokenizer": {"type": "Sequence", "pretokenizers": [{"type": "Split", "pattern": {"Regex": "\\d+"},
    "behavior": "Isolated"}, {"type": "ByteLevel"}]}})";
  s = TokenizerFromHfJson(path).status();
  EXPECT_EQ(s.code(), absl::StatusCode::kUnimplemented);
  EXPECT_THAT(std::string(s.message()), ::testing::HasSubstr("\\d+"));
  std::ofstream(path, std::ios::trunc) << "{not json";
  EXPECT_FALSE(TokenizerFromHfJson(path).ok());
}

// Qwen2's pipeline (NFC, its Split regex, ByteLevel) as a decoder reads it:
// the ids tokenizers gives (tools/golden/causal_embedder_golden.py, whose
// template appends <|endoftext|>; the decoder adds no such token), decomposed
// accents and Hangul jamo among the texts.
TEST(ByteLevelBpeTest, NfcNormalizerMatchesHf) {
  const std::string dir = std::string(ATTNSERVE_SOURCE_DIR) + "/tests/golden/encoder_models/qwen3_embedding_tiny/";
  const nlohmann::json golden =
      nlohmann::json::parse(ReadFile(std::string(ATTNSERVE_SOURCE_DIR) +
                                     "/tests/golden/encoder/causal_embedder_golden.json"))["tokenizer"]["qwen3_embedding_tiny"];
  auto tok = TokenizerFromHfJson(dir + "tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status();
  ASSERT_GE(golden.size(), 10u);
  int changed_by_nfc = 0;
  for (const auto& c : golden) {
    const std::string text = c["text"];
    std::vector<int32_t> want = c["ids"];
    want.pop_back();  // the template's <|endoftext|>
    TokenizeOptions plain;
    plain.add_bos = false;
    plain.add_eos = false;
    auto ids = (*tok)->Encode(text, plain);
    ASSERT_TRUE(ids.ok()) << ids.status();
    EXPECT_EQ(*ids, want) << text;
    std::string nfc;
    changed_by_nfc += ToNfc(text, &nfc);
  }
  EXPECT_GE(changed_by_nfc, 3);
  // Another normalizer would change the ids unseen: refused, naming it.
  nlohmann::json j = nlohmann::json::parse(ReadFile(dir + "tokenizer.json"));
  j["normalizer"] = {{"type", "NFKC"}};
  const std::string path = ::testing::TempDir() + "nfkc_tokenizer.json";
  {
    std::ofstream out(path);
    out << j.dump();
  }
  auto refused = TokenizerFromHfJson(path);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(std::string(refused.status().message()), ::testing::HasSubstr("normalizer 'NFKC'"));
}

}  // namespace
}  // namespace attnserve
