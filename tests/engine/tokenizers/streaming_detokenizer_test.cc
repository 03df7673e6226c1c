#include "engine/tokenizers/streaming_detokenizer.h"

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/formats/gguf_file.h"
#include "engine/tokenizers/tokenizer_factory.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

const std::string kStoriesDir = std::string(ATTNSERVE_SHARED_DIR) + "/models/stories260K/";

std::unique_ptr<Tokenizer> Stories() {
  auto g = GgufFile::Open(kStoriesDir + "stories260K.gguf");
  EXPECT_TRUE(g.ok()) << g.status();
  auto t = TokenizerFromGguf(**g);
  EXPECT_TRUE(t.ok()) << t.status();
  return std::move(*t);
}

bool ValidUtf8(const std::string& s) {
  std::string copy = s;
  return TakeCompleteUtf8(copy, true) == s;
}

TEST(StreamingDetokenizerTest, HoldsPartialCharactersUntilComplete) {
  auto t = Stories();
  // "é😀" is outside the vocabulary: byte-fallback tokens.
  TokenizeOptions o;
  o.add_bos = false;
  std::vector<int32_t> ids = *t->Encode("é😀!", o);
  StreamingDetokenizer d(*t, t->special().bos);
  std::string all;
  std::vector<std::string> pieces;
  for (int32_t id : ids) {
    pieces.push_back(d.Push(id));
    EXPECT_TRUE(ValidUtf8(pieces.back()));
    all += pieces.back();
  }
  all += d.Flush();
  EXPECT_EQ(all, "é😀!");
  // Some step returned nothing (a partial character was held).
  EXPECT_NE(std::find(pieces.begin(), pieces.end(), ""), pieces.end());
  EXPECT_EQ(d.pending_bytes(), 0u);
}

TEST(StreamingDetokenizerTest, StreamEqualsWholeDecodeOnReferenceRun) {
  auto t = Stories();
  std::ifstream f(kStoriesDir + "expected/greedy_reference.json");
  std::stringstream ss;
  ss << f.rdbuf();
  nlohmann::json ref = nlohmann::json::parse(ss.str());
  for (const auto& c : ref["runc_cases"]) {
    std::vector<int32_t> prompt = c["prompt_ids_with_bos"].get<std::vector<int32_t>>();
    std::vector<int32_t> gen = c["generated_ids"].get<std::vector<int32_t>>();
    StreamingDetokenizer d(*t, prompt.back());
    std::string streamed;
    for (int32_t id : gen) streamed += d.Push(id);
    streamed += d.Flush();
    std::vector<int32_t> all = prompt;
    all.insert(all.end(), gen.begin(), gen.end());
    std::string whole = *t->Decode(all), head = *t->Decode(prompt);
    EXPECT_EQ(head + streamed, whole) << c["name"];
  }
}

// With write_special, control tokens are written as their vocabulary entry
// and the piece after one keeps its space, as the core's Detokenize (checked
// against transformers' decode with skip_special_tokens=False) writes the
// same ids; without it they add nothing.
TEST(StreamingDetokenizerTest, WritesSpecialTokensWhenAsked) {
  auto t = Stories();
  TokenizeOptions o;
  o.add_bos = false;
  const std::vector<int32_t> once = *t->Encode("Once upon", o);
  const int32_t bos = t->special().bos, eos = t->special().eos;
  std::vector<int32_t> ids = {bos};
  ids.insert(ids.end(), once.begin(), once.end());
  ids.push_back(eos);
  ids.push_back(bos);
  ids.insert(ids.end(), once.begin(), once.end());
  for (bool write : {true, false}) {
    StreamingDetokenizer d(*t, /*prev_token=*/-1, write);
    std::string streamed;
    for (int32_t id : ids) streamed += d.Push(id);
    streamed += d.Flush();
    EXPECT_EQ(streamed, write ? "<s> Once upon</s><s> Once upon" : "Once upon Once upon") << write;
  }
}

TEST(StreamingDetokenizerTest, InvalidBytesBecomeReplacementCharacters) {
  std::string b = "a\xFF" "b";
  EXPECT_EQ(TakeCompleteUtf8(b, false), "a\xEF\xBF\xBD" "b");
  b = "x\xE2\x82";  // incomplete euro sign: held
  EXPECT_EQ(TakeCompleteUtf8(b, false), "x");
  EXPECT_EQ(b, "\xE2\x82");
  b += "\xAC";
  EXPECT_EQ(TakeCompleteUtf8(b, false), "\xE2\x82\xAC");
  b = "\xE2\x82" "A";  // broken by an ASCII byte
  EXPECT_EQ(TakeCompleteUtf8(b, false), "\xEF\xBF\xBD" "A");
  b = "\xED\xA0\x80";  // a surrogate is never valid
  EXPECT_EQ(TakeCompleteUtf8(b, false), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
  b = "\xF0\x9F";  // end of stream with an incomplete character
  EXPECT_EQ(TakeCompleteUtf8(b, true), "\xEF\xBF\xBD");
  EXPECT_TRUE(b.empty());
  auto t = Stories();
  StreamingDetokenizer d(*t);
  EXPECT_EQ(d.Push(*t->PieceToId("<0xF0>")), "");
  EXPECT_EQ(d.pending_bytes(), 1u);
  EXPECT_EQ(d.Flush(), "\xEF\xBF\xBD");
}

}  // namespace
}  // namespace attnserve
