#include "server/http/json_body.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "engine/tokenizers/unicode_util.h"
#include "server/core/proto_convert.h"
#include "server/http/gateway_util.h"
#include "server/http/native_api.h"

namespace attnserve {
namespace {

using ::testing::HasSubstr;

TEST(ParseJsonObjectTest, AcceptsAnObject) {
  absl::StatusOr<nlohmann::json> j = ParseJsonObject(R"({"a": [1, {"b": "c"}]})");
  ASSERT_TRUE(j.ok()) << j.status();
  EXPECT_EQ((*j)["a"][1]["b"], "c");
}

TEST(ParseJsonObjectTest, SyntaxErrorNamesTheFieldAndByte) {
  absl::StatusOr<nlohmann::json> j = ParseJsonObject(R"({"inputs": [{"text": "a"}, {"text": tru}]})");
  ASSERT_EQ(j.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(j.status().message(), HasSubstr("not valid JSON"));
  EXPECT_THAT(j.status().message(), HasSubstr("inputs[1].text"));
  EXPECT_THAT(j.status().message(), HasSubstr("byte"));
}

TEST(ParseJsonObjectTest, InvalidUtf8NamesTheField) {
  const std::string body = "{\"inputs\": [{\"text\": \"ok\"}, {\"text\": \"bad \xC3\x28 byte\"}]}";
  absl::StatusOr<nlohmann::json> j = ParseJsonObject(body);
  ASSERT_EQ(j.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(j.status().message(), HasSubstr("not valid UTF-8"));
  EXPECT_THAT(j.status().message(), HasSubstr("inputs[1].text"));
  EXPECT_TRUE(IsValidUtf8(j.status().message()));
}

TEST(ParseJsonObjectTest, EmptyBodyAndNonObjectsAreRefused) {
  EXPECT_THAT(ParseJsonObject("").status().message(), HasSubstr("empty"));
  EXPECT_THAT(ParseJsonObject("[1,2]").status().message(), HasSubstr("must be a JSON object, not array"));
  EXPECT_THAT(ParseJsonObject("\"text\"").status().message(), HasSubstr("not string"));
  EXPECT_EQ(ParseJsonObject("{} trailing").status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(Utf8Test, Sanitizes) {
  EXPECT_EQ(SanitizeUtf8("\xC0\xAF"), "\\xC0\\xAF");          // overlong '/'
  EXPECT_EQ(SanitizeUtf8("\xED\xA0\x80"), "\\xED\\xA0\\x80");  // surrogate
  EXPECT_EQ(SanitizeUtf8("\xF0\x9F\x98\x80"), "\xF0\x9F\x98\x80");
  EXPECT_EQ(SanitizeUtf8("a\xFF" "b"), "a\\xFFb");
  EXPECT_EQ(SanitizeUtf8("é"), "é");
}

TEST(NativeApiTest, EncodeRequestMapsOntoTheProto) {
  absl::StatusOr<v1::EncodeRequest> r = ParseEncodeRequest(
      R"({"inputs": [{"text": "hi"}, {"token_ids": {"ids": [101, 7592, 102]}}], "pooling": "POOLING_CLS",
          "normalize": true, "attentionLayers": [0, 2]})");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->inputs_size(), 2);
  EXPECT_EQ(r->inputs(0).text(), "hi");
  EXPECT_THAT(r->inputs(1).token_ids().ids(), ::testing::ElementsAre(101, 7592, 102));
  EXPECT_EQ(r->pooling(), v1::POOLING_CLS);
  EXPECT_TRUE(r->has_normalize() && r->normalize());
  EXPECT_THAT(r->attention_layers(), ::testing::ElementsAre(0, 2));
}

TEST(NativeApiTest, UnknownFieldIsRefusedByName) {
  absl::StatusOr<v1::EncodeRequest> r = ParseEncodeRequest(R"({"inputs": [{"text": "hi"}], "polling": "POOLING_CLS"})");
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("polling"));
}

TEST(NativeApiTest, WrongTypesAreRefusedByName) {
  absl::StatusOr<v1::GenerateRequest> r =
      ParseGenerateRequest(R"({"text": "hi", "sampling": {"max_new_tokens": "many"}})");
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("max_new_tokens"));

  r = ParseGenerateRequest(R"({"text": 5})");
  ASSERT_EQ(r.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(r.status().message(), HasSubstr("text"));

  absl::StatusOr<v1::EncodeRequest> e = ParseEncodeRequest(R"({"inputs": {"text": "not a list"}})");
  ASSERT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(e.status().message(), HasSubstr("inputs: must be a JSON array, got object"));

  e = ParseEncodeRequest(R"({"inputs": [{"token_ids": {"ids": 7}}]})");
  ASSERT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(e.status().message(), HasSubstr("inputs[0].token_ids.ids: must be a JSON array"));

  absl::StatusOr<v1::GenerateRequest> g = ParseGenerateRequest(R"({"text": "a", "sampling": {"stop": "."}})");
  ASSERT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(g.status().message(), HasSubstr("sampling.stop: must be a JSON array"));

  // protobuf's parser would take these; the API does not.
  e = ParseEncodeRequest(R"({"inputs": [{"text": "a"}], "normalize": "yes"})");
  ASSERT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(e.status().message(), HasSubstr("normalize: must be a boolean, got string"));
  g = ParseGenerateRequest(R"({"text": "a", "sampling": {"stop": [3]}})");
  ASSERT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(g.status().message(), HasSubstr("sampling.stop[0]: must be a string, got number"));
  g = ParseGenerateRequest(R"({"text": "a", "sampling": 5})");
  ASSERT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(g.status().message(), HasSubstr("sampling: must be an object"));

  e = ParseEncodeRequest(R"({"inputs": [{"token_ids": {"ids": [1, 2.5]}}]})");
  ASSERT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(e.status().message(), HasSubstr("ids"));

  e = ParseEncodeRequest(R"({"inputs": [{"text": "x"}], "pooling": "POOLING_SUM"})");
  ASSERT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(e.status().message(), HasSubstr("pooling"));
}

TEST(NativeApiTest, GenerateRequestMapsSampling) {
  absl::StatusOr<v1::GenerateRequest> r = ParseGenerateRequest(
      R"({"token_ids": {"ids": [1, 2]}, "sampling": {"max_new_tokens": 8, "temperature": 0, "seed": "42",
          "stop": ["\n"], "top_logprobs": 3}})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_THAT(r->token_ids().ids(), ::testing::ElementsAre(1, 2));
  EXPECT_EQ(r->sampling().max_new_tokens(), 8);
  EXPECT_TRUE(r->sampling().has_temperature());
  EXPECT_EQ(r->sampling().temperature(), 0.0f);
  EXPECT_EQ(r->sampling().seed(), 42u);
  EXPECT_EQ(r->sampling().top_logprobs(), 3);
}

ModelDescription Decoder512() {
  ModelDescription d;
  d.vocab_size = 512;
  d.max_positions = 512;
  return d;
}

TEST(NativeApiTest, PenaltiesAndLogitBiasReachTheEngineParams) {
  absl::StatusOr<v1::GenerateRequest> r = ParseGenerateRequest(
      R"({"text": "x", "sampling": {"frequency_penalty": 0.5, "presence_penalty": -1.5, "min_p": 0.25,
          "logit_bias": {"300": 4.5, "2": -100, "17": 0.25}}})");
  ASSERT_TRUE(r.ok()) << r.status();
  absl::StatusOr<GenerationParams> p = ToGenerationParams(*r, Decoder512(), 256, 1);
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_FLOAT_EQ(p->frequency_penalty, 0.5f);
  EXPECT_FLOAT_EQ(p->presence_penalty, -1.5f);
  EXPECT_FLOAT_EQ(p->min_p, 0.25f);
  ASSERT_EQ(p->logit_bias.size(), 3u);  // in id order
  EXPECT_EQ(p->logit_bias[0].id, 2);
  EXPECT_FLOAT_EQ(p->logit_bias[0].bias, -100.0f);
  EXPECT_EQ(p->logit_bias[1].id, 17);
  EXPECT_EQ(p->logit_bias[2].id, 300);
  EXPECT_FLOAT_EQ(p->logit_bias[2].bias, 4.5f);
  // Unset: off.
  absl::StatusOr<GenerationParams> plain = ToGenerationParams(v1::GenerateRequest(), Decoder512(), 256, 1);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(plain->frequency_penalty, 0.0f);
  EXPECT_EQ(plain->presence_penalty, 0.0f);
  EXPECT_TRUE(plain->logit_bias.empty());
}

TEST(NativeApiTest, OutOfRangePenaltiesAndBiasesNameTheFieldAndLimit) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"frequency_penalty": 2.5})", "sampling.frequency_penalty = 2.5: must be in [-2, 2]"},
      {R"({"presence_penalty": -3})", "sampling.presence_penalty = -3: must be in [-2, 2]"},
      {R"({"min_p": 1.01})", "sampling.min_p = 1.01: must be in [0, 1]"},
      {R"({"presence_penalty": "NaN"})", "sampling.presence_penalty = nan: must be in [-2, 2]"},
      {R"({"logit_bias": {"512": 1}})", "logit_bias: token id 512 is not in [0, 512)"},
      {R"({"logit_bias": {"-4": 1}})", "logit_bias: token id -4 is not in [0, 512)"},
      {R"({"logit_bias": {"7": 150}})", "logit_bias[7] must be in [-100, 100], got 150"},
      {R"({"logit_bias": {"7": "-Infinity"}})", "logit_bias[7] must be in [-100, 100], got -inf"},
  };
  for (const auto& [sampling, expected] : cases) {
    absl::StatusOr<v1::GenerateRequest> r =
        ParseGenerateRequest(absl::StrCat(R"({"text": "x", "sampling": )", sampling, "}"));
    ASSERT_TRUE(r.ok()) << sampling << ": " << r.status();
    absl::StatusOr<GenerationParams> p = ToGenerationParams(*r, Decoder512(), 256, 1);
    ASSERT_EQ(p.status().code(), absl::StatusCode::kInvalidArgument) << sampling;
    EXPECT_THAT(p.status().message(), HasSubstr(expected)) << sampling;
  }
}

TEST(NativeApiTest, ChunksFoldIntoOneAnswer) {
  v1::GenerateResponse a, b, total;
  a.add_token_ids(5);
  a.set_text("Once");
  a.add_logprobs()->set_logprob(-0.5f);
  b.add_token_ids(6);
  b.set_text(" upon");
  b.add_logprobs()->set_logprob(-1.5f);
  b.set_finish_reason(v1::FINISH_REASON_LENGTH);
  b.mutable_usage()->set_generated_tokens(2);
  b.mutable_usage()->set_peak_kv_cache_bytes(4096);
  AppendGenerateChunk(&total, a);
  AppendGenerateChunk(&total, b);
  EXPECT_THAT(total.token_ids(), ::testing::ElementsAre(5, 6));
  EXPECT_EQ(total.text(), "Once upon");
  ASSERT_EQ(total.logprobs_size(), 2);
  EXPECT_EQ(total.logprobs(1).logprob(), -1.5f);
  EXPECT_EQ(total.finish_reason(), v1::FINISH_REASON_LENGTH);
  EXPECT_EQ(total.usage().peak_kv_cache_bytes(), 4096);
  const nlohmann::json j = nlohmann::json::parse(ProtoToJson(total));
  EXPECT_EQ(j["text"], "Once upon");
  EXPECT_EQ(j["finish_reason"], "FINISH_REASON_LENGTH");
  EXPECT_EQ(j["usage"]["peak_kv_cache_bytes"], "4096");  // proto3 JSON: int64 as a string
  EXPECT_EQ(j["usage"]["preemptions"], 0);                // zero fields are printed
}

TEST(GatewayUtilTest, StatusJsonAndRetryAfter) {
  const absl::Status full = absl::ResourceExhaustedError("queue full (--max-queue=4)");
  const nlohmann::json j = nlohmann::json::parse(StatusJson(full));
  EXPECT_EQ(j["error"]["code"], "resource_exhausted");
  EXPECT_EQ(j["error"]["message"], "queue full (--max-queue=4)");
  auto headers = ErrorHeaders(full, 2);
  ASSERT_EQ(headers.size(), 1u);
  EXPECT_EQ(headers[0].first, "Retry-After");
  EXPECT_EQ(headers[0].second, "2");
  EXPECT_TRUE(ErrorHeaders(absl::InvalidArgumentError("x"), 2).empty());
  // A message quoting invalid UTF-8 still gives a parseable body.
  const nlohmann::json parsed =
      nlohmann::json::parse(StatusJson(absl::InvalidArgumentError("bad \xFF")), nullptr, /*allow_exceptions=*/false);
  EXPECT_FALSE(parsed.is_discarded());
  EXPECT_EQ(parsed["error"]["message"], "bad \\xFF");
}

TEST(GatewayUtilTest, SseFraming) {
  EXPECT_EQ(SseEvent("{\"a\":1}"), "data: {\"a\":1}\n\n");
  EXPECT_EQ(SseEvent("{}", "error"), "event: error\ndata: {}\n\n");
}

TEST(GatewayUtilTest, RequestDeadlineHeader) {
  const absl::Time now = absl::FromUnixSeconds(1000);
  EXPECT_EQ(*RequestDeadline({}, now), absl::InfiniteFuture());
  EXPECT_EQ(*RequestDeadline({{"x-request-timeout", "2.5"}}, now), now + absl::Milliseconds(2500));
  for (const char* bad : {"0", "-1", "soon", "1e9", "nan"}) {
    absl::StatusOr<absl::Time> d = RequestDeadline({{"x-request-timeout", bad}}, now);
    ASSERT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument) << bad;
    EXPECT_THAT(d.status().message(), HasSubstr("X-Request-Timeout")) << bad;
  }
}

}  // namespace
}  // namespace attnserve
