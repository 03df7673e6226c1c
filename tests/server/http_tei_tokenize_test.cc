// TEI's /tokenize and /decode bodies and answers (server/http/tei_tokenize.h);
// the real binary against Hugging Face tokenizers in
// tests/integration/test_http_tei_tokenize.py.
#include "server/http/tei_tokenize.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;

TEST(TeiTokenizeTest, BodiesAndAnswers) {
  EXPECT_TRUE(IsTeiTokenize(json::parse(R"({"inputs": "a"})")));
  EXPECT_FALSE(IsTeiTokenize(json::parse(R"({"prompt": "a"})")));
  EXPECT_FALSE(IsTeiTokenize(json::parse(R"({"inputs": "a", "messages": []})")));
  auto requests = ParseTeiTokenizeJson(json::parse(R"({"inputs": ["héllo", "b"], "add_special_tokens": false})"));
  ASSERT_TRUE(requests.ok()) << requests.status();
  ASSERT_EQ(requests->size(), 2u);
  EXPECT_EQ((*requests)[0].model(), v1::MODEL_KIND_ENCODER);
  EXPECT_FALSE((*requests)[0].add_special_tokens());
  EXPECT_EQ((*requests)[1].text(), "b");
  requests = ParseTeiTokenizeJson(json::parse(R"({"inputs": "x"})"));
  ASSERT_TRUE(requests.ok());
  EXPECT_TRUE((*requests)[0].add_special_tokens());  // TEI's default
  for (const char* bad : {R"({"inputs": []})", R"({"inputs": [1]})", R"({"inputs": 3})",
                          R"({"inputs": "a", "add_special_tokens": 1})", R"({"inputs": "a", "prompt_name": "q"})"}) {
    EXPECT_FALSE(ParseTeiTokenizeJson(json::parse(bad)).ok()) << bad;
  }

  // "héllo": [CLS] h é l l o... as two tokens with byte spans, then [SEP].
  std::vector<v1::TokenizeRequest> one(1);
  one[0].set_text("héllo");
  v1::TokenizeResponse r;
  for (int id : {101, 7, 8, 102}) r.add_token_ids(id);
  for (const char* t : {"[CLS]", "he", "##llo", "[SEP]"}) r.add_tokens(t);
  auto span = [&](bool special, int start, int end) {
    v1::TokenSpan* s = r.add_spans();
    s->set_special(special);
    s->set_start(start);
    s->set_end(end);
  };
  span(true, 0, 0);
  span(false, 0, 3);
  span(false, 3, 6);
  span(true, 0, 0);
  absl::StatusOr<json> answer = TeiTokenizeResponse(one, {r});
  ASSERT_TRUE(answer.ok()) << answer.status();
  EXPECT_EQ(*answer, json::parse(R"([[
      {"id": 101, "text": "[CLS]", "special": true, "start": null, "stop": null},
      {"id": 7, "text": "hé", "special": false, "start": 0, "stop": 3},
      {"id": 8, "text": "llo", "special": false, "start": 3, "stop": 6},
      {"id": 102, "text": "[SEP]", "special": true, "start": null, "stop": null}]])"));
  r.mutable_spans(2)->set_end(9);  // past the text
  EXPECT_EQ(TeiTokenizeResponse(one, {r}).status().code(), absl::StatusCode::kInternal);
  r.mutable_spans()->RemoveLast();
  EXPECT_EQ(TeiTokenizeResponse(one, {r}).status().code(), absl::StatusCode::kInternal);
}

TEST(TeiDecodeTest, OneOrManyIdLists) {
  auto requests = ParseTeiDecodeRequest(R"({"ids": [101, 7, 102]})");
  ASSERT_TRUE(requests.ok()) << requests.status();
  ASSERT_EQ(requests->size(), 1u);
  EXPECT_EQ((*requests)[0].token_ids_size(), 3);
  EXPECT_TRUE((*requests)[0].skip_special_tokens());  // TEI's default
  EXPECT_EQ((*requests)[0].model(), v1::MODEL_KIND_ENCODER);
  requests = ParseTeiDecodeRequest(R"({"ids": [[1], [2, 3]], "skip_special_tokens": false})");
  ASSERT_TRUE(requests.ok()) << requests.status();
  ASSERT_EQ(requests->size(), 2u);
  EXPECT_FALSE((*requests)[1].skip_special_tokens());
  const std::pair<const char*, const char*> bad[] = {
      {R"({})", "ids: required"},         {R"({"ids": []})", "ids"},
      {R"({"ids": [1, "a"]})", "ids[1]"}, {R"({"ids": [[1], [-2]]})", "ids[1][0] = -2"},
      {R"({"ids": [[1], 2]})", "ids[1]"},
  };
  for (const auto& [body, expected] : bad) {
    auto refused = ParseTeiDecodeRequest(body);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << body;
    EXPECT_THAT(refused.status().message(), HasSubstr(expected)) << body;
  }
}

}  // namespace
}  // namespace attnserve
