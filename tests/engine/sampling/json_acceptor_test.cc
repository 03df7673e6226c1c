// JsonAcceptor against CPython's json module (tests/golden/json/documents.json,
// written by tools/golden/json_documents.py), and JsonTokenMask against the
// plain definition (a token is allowed when the acceptor takes its bytes)
// on real vocabularies.
#include "engine/sampling/json_acceptor.h"

#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/escaping.h"
#include "engine/formats/decoder_loader.h"
#include "engine/sampling/json_schema.h"
#include "engine/sampling/json_token_mask.h"
#include "engine/sampling/lazy_schema_mask.h"
#include "engine/tokenizers/tokenizer_factory.h"
#include "gtest/gtest.h"
#include "nlohmann/json.hpp"

namespace attnserve {
namespace {

using json = nlohmann::json;

std::vector<std::string> GoldenDocuments(const char* verdict) {
  std::ifstream in(ATTNSERVE_SOURCE_DIR "/tests/golden/json/documents.json");
  const json doc = json::parse(in);
  std::vector<std::string> out;
  for (const json& hex : doc.at(verdict)) {
    std::string bytes;
    EXPECT_TRUE(absl::HexStringToBytes(hex.get<std::string>(), &bytes));
    out.push_back(std::move(bytes));
  }
  return out;
}

// Fed whole: every byte taken and the document complete.
bool Accepts(const std::string& doc) {
  JsonAcceptor a;
  return a.Feed(doc) && a.complete();
}

TEST(JsonAcceptorTest, AcceptsEveryDocumentPythonLoadsAndEachPrefixStaysOpen) {
  const std::vector<std::string> docs = GoldenDocuments("valid");
  ASSERT_GE(docs.size(), 400u);
  for (const std::string& doc : docs) {
    JsonAcceptor a;
    for (size_t i = 0; i < doc.size(); ++i) {
      ASSERT_FALSE(a.complete()) << "complete before byte " << i << " of " << absl::CEscape(doc);
      ASSERT_TRUE(a.Feed(static_cast<uint8_t>(doc[i]))) << "byte " << i << " of " << absl::CEscape(doc);
    }
    EXPECT_TRUE(a.complete()) << absl::CEscape(doc);
  }
}

TEST(JsonAcceptorTest, RefusesEveryDocumentPythonRefuses) {
  const std::vector<std::string> docs = GoldenDocuments("invalid");
  ASSERT_GE(docs.size(), 1000u);
  for (const std::string& doc : docs) EXPECT_FALSE(Accepts(doc)) << absl::CEscape(doc);
}

TEST(JsonAcceptorTest, LimitsWhitespaceAsLlamaCppsGrammar) {
  EXPECT_TRUE(Accepts("{ \"a\" : 1 }"));
  EXPECT_FALSE(Accepts("{  \"a\":1}"));  // two spaces
  EXPECT_FALSE(Accepts("{\n\n\"a\":1}"));  // two newlines
  EXPECT_FALSE(Accepts("{\r\n\"a\":1}"));
  EXPECT_FALSE(Accepts("{\t\"a\":1}"));  // a tab only after a newline
  EXPECT_TRUE(Accepts("{\n" + std::string(20, ' ') + "\"a\":1}"));
  EXPECT_FALSE(Accepts("{\n" + std::string(21, ' ') + "\"a\":1}"));
  EXPECT_FALSE(Accepts("{\"a\":\"  \n\n\"}"));  // raw newlines in a string
  EXPECT_TRUE(Accepts("{\"a\":\"  \\n\\n  \"}"));  // spaces in a string are text
}

TEST(JsonAcceptorTest, NestsUpToTheLimit) {
  const std::string deep = "{\"a\":" + std::string(kMaxJsonDepth - 1, '[') + std::string(kMaxJsonDepth - 1, ']') + "}";
  EXPECT_TRUE(Accepts(deep));
  JsonAcceptor a;
  EXPECT_TRUE(a.Feed("{\"a\":" + std::string(kMaxJsonDepth - 1, '[')));
  EXPECT_FALSE(a.Feed('['));
}

TEST(JsonAcceptorTest, NothingFollowsTheObject) {
  JsonAcceptor a;
  ASSERT_TRUE(a.Feed("{\"a\":[1,{\"b\":null}]}"));
  EXPECT_TRUE(a.complete());
  for (int b = 0; b < 256; ++b) {
    JsonAcceptor copy = a;
    EXPECT_FALSE(copy.Feed(static_cast<uint8_t>(b))) << b;
  }
}

// The mask by definition: each token's bytes fed to a copy of the state.
std::vector<uint8_t> MaskByDefinition(const Tokenizer& tok, const JsonAcceptor& state,
                                      const std::vector<int32_t>& end_ids) {
  std::vector<uint8_t> allowed(tok.vocab_size(), 0);
  int32_t ordinary = 0;
  while (tok.IsControl(ordinary)) ++ordinary;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    if (state.complete()) {
      allowed[id] = std::find(end_ids.begin(), end_ids.end(), id) != end_ids.end();
      continue;
    }
    if (tok.IsControl(id)) continue;
    const std::string bytes = tok.TokenBytes(id, ordinary);
    JsonAcceptor copy = state;
    allowed[id] = !bytes.empty() && copy.Feed(bytes);
  }
  return allowed;
}

// States along real documents: the mask must equal the definition at each.
void ExpectMaskMatchesDefinition(const Tokenizer& tok) {
  const JsonTokenMask mask(std::make_shared<const SortedVocabulary>(tok));
  // A tokenizer read alone (SmolLM's tokenizer.json) knows no EOS: any id serves.
  const int32_t eos = std::max(tok.special().eos, 0);
  const std::vector<int32_t> end_ids = {eos};
  std::vector<std::string> docs = GoldenDocuments("valid");
  docs.resize(std::min<size_t>(docs.size(), 80));
  std::vector<uint8_t> allowed;
  int states = 0;
  for (const std::string& doc : docs) {
    JsonAcceptor a;
    for (size_t i = 0; i <= doc.size(); i += 3) {
      const int n = mask.Fill(a, end_ids, allowed);
      const std::vector<uint8_t> expected = MaskByDefinition(tok, a, end_ids);
      ASSERT_EQ(allowed, expected) << "after " << i << " bytes of " << absl::CEscape(doc);
      EXPECT_EQ(n, std::count(expected.begin(), expected.end(), 1));
      ++states;
      // Byte fallback / byte-level pieces: some token always continues an open document.
      if (!a.complete()) {
        EXPECT_GT(n, 0) << "after " << i << " bytes of " << absl::CEscape(doc);
      }
      for (size_t j = i; j < std::min(i + 3, doc.size()); ++j) ASSERT_TRUE(a.Feed(static_cast<uint8_t>(doc[j])));
    }
    ASSERT_TRUE(a.complete());
    EXPECT_EQ(mask.Fill(a, end_ids, allowed), 1);
    EXPECT_EQ(allowed[eos], 1);
  }
  EXPECT_GT(states, 500);
}

TEST(JsonTokenMaskTest, MatchesTheDefinitionOnStories260KsSentencePieceVocabulary) {
  auto m = LoadDecoder(std::string(ATTNSERVE_SHARED_DIR) + "/models/stories260K/stories260K.gguf", DType::kF32);
  ASSERT_TRUE(m.ok()) << m.status();
  ExpectMaskMatchesDefinition(*m->tokenizer);
}

TEST(JsonTokenMaskTest, MatchesTheDefinitionOnSmolLMsByteLevelVocabulary) {
  auto tok = TokenizerFromHfJson(ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_tokenizers/smollm_tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status();
  ExpectMaskMatchesDefinition(**tok);
}

// Every single byte plus the multi-character punctuation real byte-level
// vocabularies learn from JSON and code, which crosses from one part of the
// grammar to the next inside one token (a key's close and its colon, a
// value's close and the object's). Id 0 is the only control token.
class PunctuationTokenizer : public Tokenizer {
 public:
  PunctuationTokenizer() {
    tokens_.push_back("");
    for (int b = 1; b < 256; ++b) tokens_.push_back(std::string(1, static_cast<char>(b)));
    for (const char* t : {"{\"", "\":", "\",", "\"}", "\"]", "\":\"", "\", \"", "\": ", "\": {", "\": [",
                          "}}", "]}", "},", "],", "}]", " {", " [", " \"", ", ", ": ", "\n ", "\n  ", "{}",
                          "[]", "true", " true", "null,", "false}", "0,", "1}", "-1", "1.5", "e+", "\\n",
                          "\\\"", "\\u00", "\xc3\xa9", "\xe2\x80", "\x9c\"", " \"\xe2\x80\x9c"}) {
      tokens_.push_back(t);
    }
    special_.eos = 0;
  }
  absl::StatusOr<std::vector<int32_t>> Encode(std::string_view, const TokenizeOptions&) const override {
    return absl::UnimplementedError("not needed");
  }
  std::string TokenBytes(int32_t id, int32_t) const override { return tokens_[id]; }
  std::string IdToPiece(int32_t id) const override { return tokens_[id]; }
  std::optional<int32_t> PieceToId(std::string_view) const override { return std::nullopt; }
  int32_t vocab_size() const override { return static_cast<int32_t>(tokens_.size()); }
  bool IsControl(int32_t id) const override { return id == 0; }
  const SpecialTokens& special() const override { return special_; }
  std::string_view kind() const override { return "bytes"; }

 private:
  std::vector<std::string> tokens_;
  SpecialTokens special_;
};

TEST(JsonTokenMaskTest, MatchesTheDefinitionWithTokensThatCrossFromOnePartToTheNext) {
  ExpectMaskMatchesDefinition(PunctuationTokenizer());
}

// A lazy JSON schema's first mask (lazy_schema_mask.h) against its
// definition, token by token: free where the token cannot begin the value
// (no bytes, or a first byte the value never starts with), else allowed
// exactly when the schema takes all of its bytes.
std::vector<uint8_t> LazyStartByDefinition(const Tokenizer& tok, const CompiledJsonSchema* schema) {
  std::vector<uint8_t> allowed(tok.vocab_size(), 0);
  int32_t ordinary = 0;
  while (tok.IsControl(ordinary)) ++ordinary;
  for (int32_t id = 0; id < tok.vocab_size(); ++id) {
    const std::string bytes = tok.IsControl(id) ? "" : tok.TokenBytes(id, ordinary);
    JsonSchemaAcceptor first(schema);
    if (bytes.empty() || !first.Feed(static_cast<uint8_t>(bytes[0]))) {
      allowed[id] = 1;
      continue;
    }
    JsonSchemaAcceptor all(schema);
    bool taken = true;
    for (char c : bytes) taken = taken && all.Feed(static_cast<uint8_t>(c));
    allowed[id] = taken;
  }
  return allowed;
}

constexpr const char* kOneCallSchema = R"({"anyOf": [
    {"type": "object", "properties": {"name": {"type": "string", "enum": ["get_weather"]},
     "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
     "required": ["name", "parameters"]},
    {"type": "object", "properties": {"name": {"type": "string", "enum": ["get_time"]},
     "parameters": {"type": "object", "properties": {}}}, "required": ["name", "parameters"]}]})";

// Returns how many tokens begin the value and are refused.
int ExpectLazyStartMatchesDefinition(const Tokenizer& tok) {
  auto schema = CompileJsonSchema(kOneCallSchema);
  EXPECT_TRUE(schema.ok()) << schema.status();
  const SortedVocabulary vocabulary(tok);
  std::vector<uint8_t> allowed;
  const int n = LazySchemaStartMask(vocabulary, JsonSchemaAcceptor(schema->get()), tok.vocab_size(), allowed);
  const std::vector<uint8_t> expected = LazyStartByDefinition(tok, schema->get());
  EXPECT_EQ(allowed, expected);
  EXPECT_EQ(n, std::count(expected.begin(), expected.end(), 1));
  return static_cast<int>(std::count(expected.begin(), expected.end(), 0));
}

TEST(LazySchemaStartMaskTest, MatchesTheDefinitionWithTokensThatBeginTheValueAndLeaveIt) {
  const PunctuationTokenizer tok;
  EXPECT_GT(ExpectLazyStartMatchesDefinition(tok), 0);
  std::vector<uint8_t> allowed;
  auto schema = CompileJsonSchema(kOneCallSchema);
  ASSERT_TRUE(schema.ok());
  LazySchemaStartMask(SortedVocabulary(tok), JsonSchemaAcceptor(schema->get()), tok.vocab_size(), allowed);
  auto id_of = [&](const std::string& bytes) {
    for (int32_t id = 0; id < tok.vocab_size(); ++id) {
      if (tok.TokenBytes(id, 1) == bytes) return id;
    }
    return -1;
  };
  EXPECT_EQ(allowed[id_of("{\"")], 1);  // the call begun
  EXPECT_EQ(allowed[id_of("{")], 1);
  EXPECT_EQ(allowed[id_of("{}")], 0);   // would begin it and leave the schema
  EXPECT_EQ(allowed[id_of(" {")], 1);   // free text: a space first
  EXPECT_EQ(allowed[id_of("[]")], 1);
  EXPECT_EQ(allowed[0], 1);             // the control (end) token
}

TEST(LazySchemaStartMaskTest, MatchesTheDefinitionOnSmolLMsByteLevelVocabulary) {
  auto tok = TokenizerFromHfJson(ATTNSERVE_SOURCE_DIR "/tests/golden/decoder_tokenizers/smollm_tokenizer.json");
  ASSERT_TRUE(tok.ok()) << tok.status();
  // (its 320-token cut has "{" only as a single byte, so nothing here
  // begins the value and leaves it: the punctuation test above has such tokens)
  ExpectLazyStartMatchesDefinition(**tok);
}

TEST(JsonTokenMaskTest, OnlyTheEndIdsOnceCompleteAndNoneWithoutThem) {
  auto m = LoadDecoder(std::string(ATTNSERVE_SHARED_DIR) + "/models/stories260K/stories260K.gguf", DType::kF32);
  ASSERT_TRUE(m.ok()) << m.status();
  const JsonTokenMask mask(std::make_shared<const SortedVocabulary>(*m->tokenizer));
  JsonAcceptor a;
  ASSERT_TRUE(a.Feed("{}"));
  std::vector<uint8_t> allowed;
  EXPECT_EQ(mask.Fill(a, {2, 7}, allowed), 2);
  EXPECT_EQ(allowed[2] + allowed[7], 2);
  EXPECT_EQ(mask.Fill(a, {}, allowed), 0);
}

}  // namespace
}  // namespace attnserve
