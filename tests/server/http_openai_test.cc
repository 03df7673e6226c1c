#include "server/http/openai_api.h"

#include <cstring>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

using ::nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;

TEST(OpenAiEmbeddingsTest, InputShapesMapOntoEncodeInputs) {
  absl::StatusOr<EmbeddingsCall> c = ParseEmbeddingsRequest(R"({"input": "one", "model": "m"})");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->request.inputs_size(), 1);
  EXPECT_EQ(c->request.inputs(0).text(), "one");
  EXPECT_FALSE(c->base64);

  c = ParseEmbeddingsRequest(R"({"input": ["a", "b"], "model": "m", "encoding_format": "base64"})");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->request.inputs_size(), 2);
  EXPECT_EQ(c->request.inputs(1).text(), "b");
  EXPECT_TRUE(c->base64);

  c = ParseEmbeddingsRequest(R"({"input": [101, 102], "model": "m"})");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->request.inputs_size(), 1);
  EXPECT_THAT(c->request.inputs(0).token_ids().ids(), ElementsAre(101, 102));
  EXPECT_FALSE(c->request.has_dimensions());

  c = ParseEmbeddingsRequest(R"({"input": "a", "model": "m", "dimensions": 64})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->request.dimensions(), 64);

  c = ParseEmbeddingsRequest(R"({"input": [[1, 2], [3]], "model": "m"})");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->request.inputs_size(), 2);
  EXPECT_THAT(c->request.inputs(1).token_ids().ids(), ElementsAre(3));

  // An empty batch maps to an empty request: the core refuses it (one
  // validation path for both doors).
  c = ParseEmbeddingsRequest(R"({"input": [], "model": "m"})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->request.inputs_size(), 0);
}

TEST(OpenAiEmbeddingsTest, BadShapesNameTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"model": "m"})", "input: required"},
      {R"({"input": 5, "model": "m"})", "input: must be"},
      {R"({"input": ["a", 5], "model": "m"})", "input[1]"},
      {R"({"input": [[1, "x"]], "model": "m"})", "input[0][1]"},
      {R"({"input": [1, 2.5], "model": "m"})", "input[1]"},
      {R"({"input": [1, 4294967296], "model": "m"})", "input[1]"},
      {R"({"input": "a", "model": 3})", "model: must be a string"},
      {R"({"input": "a", "model": "m", "encoding_format": "int8"})", "encoding_format"},
      {R"({"input": "a", "model": "m", "dimensions": 6.5})", "dimensions: must be an integer"},
      {R"({"input": "a", "model": "m", "priority": 1})", "priority: not supported"},
  };
  for (const auto& [body, expected] : cases) {
    absl::StatusOr<EmbeddingsCall> c = ParseEmbeddingsRequest(body);
    ASSERT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << body;
    EXPECT_THAT(c.status().message(), HasSubstr(expected)) << body;
  }
}

v1::EncodeResponse TwoEmbeddings() {
  v1::EncodeResponse r;
  for (float base : {1.0f, -2.0f}) {
    v1::Tensor* t = r.add_results()->mutable_embedding();
    t->add_shape(3);
    for (int i = 0; i < 3; ++i) t->add_values(base + 0.25f * i);
  }
  r.mutable_usage()->set_prompt_tokens(7);
  return r;
}

TEST(OpenAiEmbeddingsTest, ResponseFloatAndBase64) {
  json j = EmbeddingsResponse(TwoEmbeddings(), "minilm", /*base64=*/false);
  EXPECT_EQ(j["object"], "list");
  EXPECT_EQ(j["model"], "minilm");
  ASSERT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(j["data"][1]["object"], "embedding");
  EXPECT_EQ(j["data"][1]["index"], 1);
  EXPECT_EQ(j["data"][1]["embedding"], json({-2.0f, -1.75f, -1.5f}));
  EXPECT_EQ(j["usage"]["prompt_tokens"], 7);
  EXPECT_EQ(j["usage"]["total_tokens"], 7);

  j = EmbeddingsResponse(TwoEmbeddings(), "minilm", /*base64=*/true);
  std::string bytes;
  ASSERT_TRUE(absl::Base64Unescape(j["data"][0]["embedding"].get<std::string>(), &bytes));
  ASSERT_EQ(bytes.size(), 3 * sizeof(float));
  float values[3];
  std::memcpy(values, bytes.data(), bytes.size());
  EXPECT_EQ(values[0], 1.0f);
  EXPECT_EQ(values[2], 1.5f);
}

TEST(OpenAiCompletionsTest, RequestMapsOntoGenerateRequest) {
  absl::StatusOr<CompletionCall> c = ParseCompletionRequest(
      R"({"model": "m", "prompt": "Once", "max_tokens": 5, "temperature": 0, "top_p": 0.9, "stop": ["\n", "."],
          "seed": 7, "logprobs": 2, "stream": true, "n": 1, "echo": false, "presence_penalty": 0.25,
          "frequency_penalty": -0.5, "logit_bias": {"5": -100, "17": 2.5},
          "top_k": 3, "min_p": 0.05, "repetition_penalty": 1.1, "user": "u", "some_future_option": {"x": 1}})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->stream);
  EXPECT_TRUE(c->format.logprobs);
  EXPECT_FALSE(c->format.echo);
  ASSERT_EQ(c->requests.size(), 1u);
  EXPECT_EQ(c->n, 1);
  const v1::GenerateRequest& r = c->requests[0];
  EXPECT_EQ(r.text(), "Once");
  EXPECT_EQ(r.sampling().max_new_tokens(), 5);
  EXPECT_TRUE(r.sampling().has_temperature());
  EXPECT_EQ(r.sampling().temperature(), 0.0f);
  EXPECT_FLOAT_EQ(r.sampling().top_p(), 0.9f);
  EXPECT_THAT(r.sampling().stop(), ElementsAre("\n", "."));
  EXPECT_EQ(r.sampling().seed(), 7u);
  EXPECT_TRUE(r.sampling().logprobs());
  EXPECT_EQ(r.sampling().top_logprobs(), 2);
  EXPECT_EQ(r.sampling().top_k(), 3);
  EXPECT_FLOAT_EQ(r.sampling().repetition_penalty(), 1.1f);
  EXPECT_FLOAT_EQ(r.sampling().min_p(), 0.05f);
  EXPECT_FLOAT_EQ(r.sampling().presence_penalty(), 0.25f);
  EXPECT_FLOAT_EQ(r.sampling().frequency_penalty(), -0.5f);
  ASSERT_EQ(r.sampling().logit_bias().size(), 2u);
  EXPECT_FLOAT_EQ(r.sampling().logit_bias().at(5), -100.0f);
  EXPECT_FLOAT_EQ(r.sampling().logit_bias().at(17), 2.5f);
}

TEST(OpenAiCompletionsTest, ChoiceAndJsonModeMapOntoResponseFormat) {
  for (const char* body : {R"({"prompt": "x", "guided_choice": ["yes", "no"]})",
                           R"({"prompt": "x", "structured_outputs": {"choice": ["yes", "no"]}})"}) {
    absl::StatusOr<CompletionCall> c = ParseCompletionRequest(body);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(c->requests[0].sampling().response_format(), v1::RESPONSE_FORMAT_CHOICE);
    EXPECT_THAT(c->requests[0].sampling().choice(), ElementsAre("yes", "no"));
  }
  for (const char* body : {R"({"prompt": "x", "guided_regex": "(yes|no)\\."})",
                           R"({"prompt": "x", "structured_outputs": {"regex": "(yes|no)\\."}})"}) {
    absl::StatusOr<CompletionCall> r = ParseCompletionRequest(body);
    ASSERT_TRUE(r.ok()) << r.status();
    EXPECT_EQ(r->requests[0].sampling().response_format(), v1::RESPONSE_FORMAT_REGEX);
    EXPECT_EQ(r->requests[0].sampling().regex(), "(yes|no)\\.");
  }
  absl::StatusOr<CompletionCall> c =
      ParseCompletionRequest(R"({"prompt": "x", "response_format": {"type": "json_object"}})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->requests[0].sampling().response_format(), v1::RESPONSE_FORMAT_JSON_OBJECT);
  EXPECT_TRUE(c->requests[0].sampling().choice().empty());
  // A schema keeps its properties in the order written (the schema decides
  // the output's order), whichever spelling carries it.
  for (const char* body :
       {R"({"prompt": "x", "response_format": {"type": "json_schema", "json_schema": {"name": "p", "strict": true,
            "schema": {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}}}}}})",
        R"({"prompt": "x", "guided_json": {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}}}})",
        R"({"prompt": "x", "structured_outputs": {"json": {"type": "object", "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}}}}})",
        R"({"prompt": "x", "guided_json": "{\"type\": \"object\", \"properties\": {\"zeta\": {\"type\": \"string\"}, \"alpha\": {\"type\": \"integer\"}}}"})"}) {
    absl::StatusOr<CompletionCall> s = ParseCompletionRequest(body);
    ASSERT_TRUE(s.ok()) << s.status() << body;
    EXPECT_EQ(s->requests[0].sampling().response_format(), v1::RESPONSE_FORMAT_JSON_SCHEMA) << body;
    const std::string& schema = s->requests[0].sampling().json_schema();
    EXPECT_LT(schema.find("zeta"), schema.find("alpha")) << schema;
  }
}

TEST(OpenAiCompletionsTest, DefaultsAndPromptForms) {
  absl::StatusOr<CompletionCall> c = ParseCompletionRequest(R"({"model": "m", "prompt": [1, 2, 3]})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->requests[0].token_ids().ids(), ElementsAre(1, 2, 3));
  EXPECT_EQ(c->requests[0].sampling().max_new_tokens(), kOpenAiDefaultMaxTokens);
  EXPECT_FALSE(c->requests[0].sampling().has_temperature());
  EXPECT_FALSE(c->requests[0].sampling().has_seed());
  EXPECT_FALSE(c->stream);
  EXPECT_FALSE(c->format.logprobs);

  c = ParseCompletionRequest(R"({"model": "m", "prompt": ["only"], "max_tokens": null, "stop": "\n"})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->requests[0].text(), "only");
  EXPECT_THAT(c->requests[0].sampling().stop(), ElementsAre("\n"));

  c = ParseCompletionRequest(R"({"model": "m", "prompt": [[4, 5]]})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->requests[0].token_ids().ids(), ElementsAre(4, 5));

  // Range checks of values the proto can hold are the core's, not ours.
  c = ParseCompletionRequest(R"({"model": "m", "prompt": "x", "max_tokens": -3, "temperature": -1})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->requests[0].sampling().max_new_tokens(), -3);
}

// A list of prompts is a batch: one request per prompt, the same sampling.
TEST(OpenAiCompletionsTest, ABatchOfPromptsSharesTheSampling) {
  absl::StatusOr<CompletionCall> c =
      ParseCompletionRequest(R"({"model": "m", "prompt": ["a", [7, 8], "c"], "max_tokens": 4, "seed": 3})");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->requests.size(), 3u);
  EXPECT_EQ(c->prompts(), 3u);
  EXPECT_EQ(c->requests[0].text(), "a");
  EXPECT_THAT(c->requests[1].token_ids().ids(), ElementsAre(7, 8));
  EXPECT_EQ(c->requests[2].text(), "c");
  for (const v1::GenerateRequest& r : c->requests) {
    EXPECT_EQ(r.sampling().max_new_tokens(), 4);
    EXPECT_EQ(r.sampling().seed(), 3u);  // n = 1: every prompt gets the seed itself
  }
  std::string many = R"({"model": "m", "prompt": [)";
  for (size_t i = 0; i <= kMaxCompletionChoices; ++i) absl::StrAppend(&many, i ? "," : "", R"("x")");
  many += "]}";
  c = ParseCompletionRequest(many);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("at most"));
}

// n samples per prompt: choices prompt-major (as OpenAI numbers them), sample
// j of a seeded request seeded S + j so the samples differ and each can be
// reproduced alone.
TEST(OpenAiCompletionsTest, NChoicesPerPromptArePromptMajorWithSeedsOffset) {
  absl::StatusOr<CompletionCall> c = ParseCompletionRequest(
      R"({"model": "m", "prompt": ["a", "b"], "n": 3, "seed": 10, "temperature": 0.8, "stream": true})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->n, 3);
  EXPECT_TRUE(c->stream);
  ASSERT_EQ(c->requests.size(), 6u);
  EXPECT_EQ(c->prompts(), 2u);
  for (size_t k = 0; k < 6; ++k) {
    EXPECT_EQ(c->requests[k].text(), k < 3 ? "a" : "b") << k;
    EXPECT_EQ(c->requests[k].sampling().seed(), 10u + k % 3) << k;
    EXPECT_FLOAT_EQ(c->requests[k].sampling().temperature(), 0.8f) << k;
  }
  // best_of equal to n is n.
  ASSERT_TRUE(ParseCompletionRequest(R"({"prompt": "a", "n": 2, "best_of": 2})").ok());
  // Unseeded samples stay unseeded (the core draws a random seed for each).
  c = ParseCompletionRequest(R"({"model": "m", "prompt": "a", "n": 2})");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->requests.size(), 2u);
  EXPECT_FALSE(c->requests[1].sampling().has_seed());
  // A seed at the top of uint64 wraps and stays distinct.
  c = ParseCompletionRequest(R"({"model": "m", "prompt": "a", "n": 2, "seed": 18446744073709551615})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->requests[1].sampling().seed(), 0u);
  // prompts × n is bounded.
  std::string body = R"({"model": "m", "n": 3, "prompt": [)";
  for (int i = 0; i < 100; ++i) absl::StrAppend(&body, i ? "," : "", R"("x")");
  body += "]}";
  c = ParseCompletionRequest(body);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("n: 3 choices for each of 100 prompts make 300 choices; at most 256"));
}

TEST(OpenAiCompletionsTest, BadShapesAndUnsupportedOptionsNameTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"model": "m"})", "prompt: required"},
      {R"({"model": "m", "prompt": 5})", "prompt: must be"},
      {R"({"model": "m", "prompt": ["a", 5]})", "prompt[1]"},
      {R"({"model": "m", "prompt": ["a", [1, "x"]]})", "prompt[1]"},
      {R"({"model": "m", "prompt": [1, "b"]})", "prompt[1]"},
      {R"({"model": "m", "prompt": "x", "max_tokens": "ten"})", "max_tokens: must be an integer"},
      {R"({"model": "m", "prompt": "x", "max_tokens": 1.5})", "max_tokens: must be an integer"},
      {R"({"model": "m", "prompt": "x", "max_tokens": 99999999999})", "max_tokens"},
      {R"({"model": "m", "prompt": "x", "temperature": "hot"})", "temperature: must be a number"},
      {R"({"model": "m", "prompt": "x", "top_p": []})", "top_p"},
      {R"({"model": "m", "prompt": "x", "stop": [1]})", "stop[0]"},
      {R"({"model": "m", "prompt": "x", "seed": -1})", "seed"},
      {R"({"model": "m", "prompt": "x", "stream": "yes"})", "stream: must be a boolean"},
      {R"({"model": "m", "prompt": "x", "logprobs": true})", "logprobs"},
      {R"({"model": "m", "prompt": "x", "n": 0})", "n: 0 is outside [1, 256]"},
      {R"({"model": "m", "prompt": "x", "n": 257})", "n: 257 is outside [1, 256]"},
      {R"({"model": "m", "prompt": "x", "n": "2"})", "n: must be an integer"},
      {R"({"model": "m", "prompt": "x", "best_of": 3})", "best_of: not supported (only best_of = n (1), got 3)"},
      {R"({"model": "m", "prompt": "x", "n": 2, "best_of": 3})", "only best_of = n (2)"},
      {R"({"model": "m", "prompt": "x", "echo": 1})", "echo: must be a boolean"},
      {R"({"model": "m", "prompt": "x", "suffix": "end"})", "suffix"},
      {R"({"model": "m", "prompt": "x", "guided_grammar": "root ::= \"a\""})",
       "guided_grammar: not supported (no such constraint; only guided_choice, guided_json, guided_regex and JSON "
       "mode)"},
      {R"({"model": "m", "prompt": "x", "guided_regex": 5})", "guided_regex: must be a string (a regular expression)"},
      {R"({"model": "m", "prompt": "x", "guided_regex": "a+", "guided_choice": ["a"]})",
       "guided_regex: a regex and another constraint (a schema, a choice, JSON mode) exclude each other"},
      {R"({"model": "m", "prompt": "x", "structured_outputs": {"regex": "a"}, "guided_regex": "b"})",
       "structured_outputs.regex: give guided_regex or it, not both"},
      {R"({"model": "m", "prompt": "x", "guided_choice": "a"})", "guided_choice: must be an array of strings"},
      {R"({"model": "m", "prompt": "x", "guided_choice": ["a", 2]})", "guided_choice[1]: must be a string"},
      {R"({"model": "m", "prompt": "x", "structured_outputs": {"grammar": "x"}})",
       "structured_outputs.grammar: not supported"},
      {R"({"model": "m", "prompt": "x", "structured_outputs": ["a"]})", "structured_outputs: must be an object"},
      {R"({"model": "m", "prompt": "x", "structured_outputs": {"choice": ["a"]}, "guided_choice": ["b"]})",
       "give guided_choice or it, not both"},
      {R"({"model": "m", "prompt": "x", "guided_choice": ["a"], "response_format": {"type": "json_object"}})",
       "response_format: json_object and guided_choice exclude each other"},
      {R"({"model": "m", "prompt": "x", "response_format": {"type": "json_schema"}})",
       "response_format.json_schema: required, an object with a \"schema\""},
      {R"({"model": "m", "prompt": "x", "response_format": {"type": "json_schema", "json_schema": {"name": "a"}}})",
       "response_format.json_schema.schema: required"},
      {R"({"model": "m", "prompt": "x", "response_format": {"type": "regex"}})", "response_format: not supported"},
      {R"({"model": "m", "prompt": "x", "guided_json": 3})", "guided_json: must be an object or a string"},
      {R"({"model": "m", "prompt": "x", "guided_json": {"type": "object"}, "guided_choice": ["a"]})",
       "guided_json: a JSON schema and a choice exclude each other"},
      {R"({"model": "m", "prompt": "x", "frequency_penalty": "high"})", "frequency_penalty: must be a number"},
      {R"({"model": "m", "prompt": "x", "presence_penalty": [1]})", "presence_penalty: must be a number"},
      {R"({"model": "m", "prompt": "x", "logit_bias": [5, 10]})", "logit_bias: must be an object"},
      {R"({"model": "m", "prompt": "x", "logit_bias": {"five": 10}})", "logit_bias: key \"five\" is not a token id"},
      {R"({"model": "m", "prompt": "x", "logit_bias": {"05": 10}})", "logit_bias: key \"05\" is not a token id"},
      {R"({"model": "m", "prompt": "x", "logit_bias": {"99999999999": 1}})", "is not a token id"},
      {R"({"model": "m", "prompt": "x", "logit_bias": {"5": "up"}})", "logit_bias[\"5\"]: must be a number"},
      {R"({"model": ["m"], "prompt": "x"})", "model"},
      {R"({"model": "m", "prompt": "x", "stream_options": {"include_usage": true}})",
       "stream_options: only allowed with \"stream\": true"},
      {R"({"model": "m", "prompt": "x", "stream": true, "stream_options": true})", "stream_options: must be an object"},
      {R"({"model": "m", "prompt": "x", "stream": true, "stream_options": {"include_usage": 1}})",
       "stream_options.include_usage: must be a boolean"},
      {R"({"model": "m", "prompt": "x", "stream": true, "stream_options": {"continuous_usage_stats": 1}})",
       "stream_options.continuous_usage_stats: must be a boolean"},
  };
  for (const auto& [body, expected] : cases) {
    absl::StatusOr<CompletionCall> c = ParseCompletionRequest(body);
    ASSERT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << body;
    EXPECT_THAT(c.status().message(), HasSubstr(expected)) << body;
  }
}

std::vector<v1::GenerateResponse> ThreeChunks() {
  std::vector<v1::GenerateResponse> chunks(3);
  const char* texts[] = {"Once", " upon", " a"};
  for (int i = 0; i < 3; ++i) {
    chunks[i].add_token_ids(10 + i);
    chunks[i].set_text(texts[i]);
    v1::PositionLogprobs* lp = chunks[i].add_logprobs();
    lp->set_logprob(-0.5f * (i + 1));
    v1::TokenLogprob* top = lp->add_top();
    top->set_token_id(10 + i);
    top->set_text(texts[i]);
    top->set_logprob(-0.5f * (i + 1));
  }
  chunks[2].set_finish_reason(v1::FINISH_REASON_LENGTH);
  v1::GenerateUsage* usage = chunks[2].mutable_usage();
  usage->set_prompt_tokens(4);
  usage->set_generated_tokens(3);
  usage->set_peak_kv_cache_bytes(8192);
  return chunks;
}

TEST(OpenAiCompletionsTest, ResponseObject) {
  const CompletionIdentity id{"cmpl-1", 1700000000, "stories260K"};
  json j = CompletionResponse({ThreeChunks()}, id, CompletionFormat{});
  EXPECT_EQ(j["id"], "cmpl-1");
  EXPECT_EQ(j["object"], "text_completion");
  EXPECT_EQ(j["created"], 1700000000);
  EXPECT_EQ(j["model"], "stories260K");
  ASSERT_EQ(j["choices"].size(), 1u);
  EXPECT_EQ(j["choices"][0]["text"], "Once upon a");
  EXPECT_EQ(j["choices"][0]["finish_reason"], "length");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  EXPECT_EQ(j["usage"]["prompt_tokens"], 4);
  EXPECT_EQ(j["usage"]["completion_tokens"], 3);
  EXPECT_EQ(j["usage"]["total_tokens"], 7);
  EXPECT_EQ(j["usage"]["peak_kv_cache_bytes"], 8192);

  j = CompletionResponse({ThreeChunks()}, id, CompletionFormat{.logprobs = true});
  const json& lp = j["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json({"Once", " upon", " a"}));
  EXPECT_EQ(lp["token_logprobs"], json({-0.5f, -1.0f, -1.5f}));
  EXPECT_EQ(lp["text_offset"], json({0, 4, 9}));
  EXPECT_EQ(lp["top_logprobs"][1][" upon"], -1.0f);
}

// "echo": the prompt leads the choice; its tokens come first in logprobs,
// the first with nulls (nothing before it), as OpenAI writes them.
std::vector<v1::GenerateResponse> ThreeChunksWithPrompt() {
  std::vector<v1::GenerateResponse> chunks = ThreeChunks();
  const char* texts[] = {"", "Hi", " there"};
  for (int i = 0; i < 3; ++i) {
    v1::PromptToken* t = chunks[0].add_prompt_tokens();
    t->set_token_id(i == 0 ? 1 : 6 + i);
    t->set_text(texts[i]);
    if (i == 0) continue;
    t->mutable_logprobs()->set_logprob(-1.0f - i);
    v1::TokenLogprob* alt = t->mutable_logprobs()->add_top();
    alt->set_token_id(20);
    alt->set_text("Ho");
    alt->set_logprob(-0.25f);
  }
  return chunks;
}

TEST(OpenAiCompletionsTest, EchoPutsThePromptFirst) {
  absl::StatusOr<CompletionCall> c =
      ParseCompletionRequest(R"({"prompt": "Hi there", "echo": true, "logprobs": 1, "max_tokens": 3})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->format.echo);
  EXPECT_FALSE(c->format.drop_generated);
  EXPECT_TRUE(c->requests[0].sampling().prompt_logprobs());

  const CompletionIdentity id{"cmpl-e", 1, "m"};
  json j = CompletionResponse({ThreeChunksWithPrompt()}, id, c->format, c->requests);
  const json& choice = j["choices"][0];
  EXPECT_EQ(choice["text"], "Hi thereOnce upon a");
  const json& lp = choice["logprobs"];
  EXPECT_EQ(lp["tokens"], json({"", "Hi", " there", "Once", " upon", " a"}));
  EXPECT_TRUE(lp["token_logprobs"][0].is_null());
  EXPECT_EQ(lp["token_logprobs"][1], -2.0f);
  EXPECT_EQ(lp["token_logprobs"][2], -3.0f);
  EXPECT_EQ(lp["token_logprobs"][3], -0.5f);
  EXPECT_TRUE(lp["top_logprobs"][0].is_null());
  EXPECT_EQ(lp["top_logprobs"][1]["Ho"], -0.25f);
  EXPECT_EQ(lp["text_offset"], json({0, 0, 2, 8, 12, 17}));

  // Without logprobs only the text; a token-id prompt echoes its tokens' text.
  c = ParseCompletionRequest(R"({"prompt": [1, 7, 8], "echo": true})");
  ASSERT_TRUE(c.ok()) << c.status();
  j = CompletionResponse({ThreeChunksWithPrompt()}, id, c->format, c->requests);
  EXPECT_EQ(j["choices"][0]["text"], "Hi thereOnce upon a");
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());

  // Streamed: the chunk carrying the prompt's tokens starts with the prompt.
  const std::vector<v1::GenerateResponse> chunks = ThreeChunksWithPrompt();
  json first = CompletionChunk(chunks[0], id, c->format, 0, 0, ChunkUsage::kOnLast, &c->requests[0]);
  EXPECT_EQ(first["choices"][0]["text"], "Hi thereOnce");
  json second = CompletionChunk(chunks[1], id, c->format, 12, 0, ChunkUsage::kOnLast, &c->requests[0]);
  EXPECT_EQ(second["choices"][0]["text"], " upon");
}

// vLLM's prompt_logprobs = k: each choice's "prompt_logprobs", null for the
// first prompt token, then {"<id>": {"logprob", "rank", "decoded_token"}}
// for the prompt token and the k best there; beside echo, each shows its
// own count of the same scores.
TEST(OpenAiCompletionsTest, PromptLogprobsAreVllms) {
  absl::StatusOr<CompletionCall> c = ParseCompletionRequest(R"({"prompt": "Hi there", "prompt_logprobs": 2})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->format.prompt_logprobs, 2);
  EXPECT_TRUE(c->requests[0].sampling().prompt_logprobs());
  EXPECT_EQ(c->requests[0].sampling().prompt_top_logprobs(), 2);
  std::vector<v1::GenerateResponse> chunks = ThreeChunksWithPrompt();
  for (int i = 1; i < 3; ++i) {
    v1::PositionLogprobs* lp = chunks[0].mutable_prompt_tokens(i)->mutable_logprobs();
    lp->set_rank(4 + i);
    v1::TokenLogprob* alt = lp->add_top();  // a second best; the prompt token itself at " there"
    alt->set_token_id(i == 2 ? 8 : 21);
    alt->set_text(i == 2 ? " there" : "Ha");
    alt->set_logprob(i == 2 ? -3.0f : -0.5f);
    lp->add_top()->set_token_id(99);  // past k = 2: not shown
  }
  const CompletionIdentity id{"cmpl-p", 1, "m"};
  json j = CompletionResponse({chunks}, id, c->format, c->requests);
  EXPECT_EQ(j["choices"][0]["prompt_logprobs"], json::parse(R"([null,
      {"7": {"logprob": -2.0, "rank": 5, "decoded_token": "Hi"},
       "20": {"logprob": -0.25, "rank": 1, "decoded_token": "Ho"},
       "21": {"logprob": -0.5, "rank": 2, "decoded_token": "Ha"}},
      {"8": {"logprob": -3.0, "rank": 6, "decoded_token": " there"},
       "20": {"logprob": -0.25, "rank": 1, "decoded_token": "Ho"}}])"));
  EXPECT_TRUE(j["choices"][0]["logprobs"].is_null());
  // Not asked: no such field.
  c = ParseCompletionRequest(R"({"prompt": "Hi there"})");
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(CompletionResponse({chunks}, id, c->format, c->requests)["choices"][0].contains("prompt_logprobs"));
  // With echo and logprobs 1: the scores cover the larger count; echo shows one.
  c = ParseCompletionRequest(R"({"prompt": "Hi there", "echo": true, "logprobs": 1, "prompt_logprobs": 2})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->requests[0].sampling().prompt_top_logprobs(), 2);
  j = CompletionResponse({chunks}, id, c->format, c->requests);
  EXPECT_EQ(j["choices"][0]["logprobs"]["top_logprobs"][1], json({{"Ho", -0.25f}}));
  EXPECT_EQ(j["choices"][0]["prompt_logprobs"][1].size(), 3u);
  // Refusals name the field and the limit; a stream carries none (vLLM).
  for (const auto& [body, message] : std::vector<std::pair<std::string, std::string>>{
           {R"({"prompt": "a", "prompt_logprobs": 21})", "prompt_logprobs: 21 is outside [0, 20]"},
           {R"({"prompt": "a", "prompt_logprobs": -1})", "prompt_logprobs: -1 is outside [0, 20]"},
           {R"({"prompt": "a", "prompt_logprobs": "2"})", "prompt_logprobs"},
           {R"({"prompt": "a", "stream": true, "prompt_logprobs": 1})",
            "prompt_logprobs: not available with \"stream\": true"}}) {
    absl::StatusOr<CompletionCall> bad = ParseCompletionRequest(body);
    ASSERT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument) << body;
    EXPECT_THAT(std::string(bad.status().message()), ::testing::HasSubstr(message)) << body;
  }
  c = ParseCompletionRequest(R"({"prompt": "a", "stream": true, "prompt_logprobs": 0})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->requests[0].sampling().prompt_logprobs());
}

// vLLM's return_token_ids: each request asks the core for the prompt's ids;
// each choice carries its generated ids and the prompt's (a stream: the ids
// of each chunk, the prompt's on the choice's first chunk only).
TEST(OpenAiCompletionsTest, ReturnTokenIdsAreVllms) {
  absl::StatusOr<CompletionCall> c =
      ParseCompletionRequest(R"({"prompt": ["a", "b"], "n": 2, "return_token_ids": true})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->format.return_token_ids);
  ASSERT_EQ(c->requests.size(), 4u);
  for (const v1::GenerateRequest& r : c->requests) EXPECT_TRUE(r.return_prompt_token_ids());
  std::vector<v1::GenerateResponse> chunks = ThreeChunks();
  chunks[0].add_prompt_token_ids(1);
  chunks[0].add_prompt_token_ids(7);
  const CompletionIdentity id{"cmpl-t", 1, "m"};
  json j = CompletionResponse({chunks}, id, c->format);
  EXPECT_EQ(j["choices"][0]["token_ids"], json({10, 11, 12}));
  EXPECT_EQ(j["choices"][0]["prompt_token_ids"], json({1, 7}));
  json first = CompletionChunk(chunks[0], id, c->format, 0);
  EXPECT_EQ(first["choices"][0]["token_ids"], json({10}));
  EXPECT_EQ(first["choices"][0]["prompt_token_ids"], json({1, 7}));
  json second = CompletionChunk(chunks[1], id, c->format, 4);
  EXPECT_EQ(second["choices"][0]["token_ids"], json({11}));
  EXPECT_FALSE(second["choices"][0].contains("prompt_token_ids"));
  // Not asked (or false): neither field, and the core is not asked.
  for (const char* body : {R"({"prompt": "a"})", R"({"prompt": "a", "return_token_ids": false})",
                           R"({"prompt": "a", "return_token_ids": null})"}) {
    c = ParseCompletionRequest(body);
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_FALSE(c->requests[0].return_prompt_token_ids()) << body;
    j = CompletionResponse({chunks}, id, c->format);
    EXPECT_FALSE(j["choices"][0].contains("token_ids")) << body;
    EXPECT_FALSE(j["choices"][0].contains("prompt_token_ids")) << body;
    EXPECT_FALSE(CompletionChunk(chunks[0], id, c->format, 0)["choices"][0].contains("token_ids")) << body;
  }
  c = ParseCompletionRequest(R"({"prompt": "a", "return_token_ids": 1})");
  ASSERT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(c.status().message(), HasSubstr("return_token_ids: must be a boolean"));
}

// vLLM's return_tokens_as_token_ids: logprobs name tokens "token_id:<id>"
// (the prompt's too, with echo); the text and the offsets stay the text's.
TEST(OpenAiCompletionsTest, TokensAsTokenIdsNameLogprobsByTheirIds) {
  absl::StatusOr<CompletionCall> c = ParseCompletionRequest(
      R"({"prompt": "Hi there", "echo": true, "logprobs": 1, "return_tokens_as_token_ids": true})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->format.tokens_as_ids);
  const CompletionIdentity id{"cmpl-i", 1, "m"};
  json j = CompletionResponse({ThreeChunksWithPrompt()}, id, c->format, c->requests);
  const json& lp = j["choices"][0]["logprobs"];
  EXPECT_EQ(lp["tokens"], json({"token_id:1", "token_id:7", "token_id:8", "token_id:10", "token_id:11",
                                "token_id:12"}));
  EXPECT_EQ(lp["top_logprobs"][1], json({{"token_id:20", -0.25f}}));
  EXPECT_EQ(lp["top_logprobs"][4], json({{"token_id:11", -1.0f}}));
  EXPECT_EQ(lp["text_offset"], json({0, 0, 2, 8, 12, 17}));
  EXPECT_EQ(j["choices"][0]["text"], "Hi thereOnce upon a");
  json chunk = CompletionChunk(ThreeChunks()[1], id, c->format, 4);
  EXPECT_EQ(chunk["choices"][0]["logprobs"]["tokens"], json({"token_id:11"}));
}

// vLLM's allowed_token_ids and bad_words reach the sampling; use_beam_search is refused
// rather than answered by sampling.
TEST(OpenAiCompletionsTest, AllowedTokenIdsAndBeamSearch) {
  absl::StatusOr<CompletionCall> c = ParseCompletionRequest(R"({"prompt": "a", "allowed_token_ids": [7, 3, 7]})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->requests[0].sampling().allowed_token_ids(), ::testing::ElementsAre(7, 3, 7));
  c = ParseCompletionRequest(R"({"prompt": "a", "bad_words": ["x y", " z"]})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_THAT(c->requests[0].sampling().bad_words(), ::testing::ElementsAre("x y", " z"));
  c = ParseCompletionRequest(
      R"({"prompt": "a", "use_beam_search": false, "allowed_token_ids": null, "skip_special_tokens": true,
          "priority": 0})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->requests[0].sampling().allowed_token_ids_size(), 0);
  EXPECT_TRUE(c->requests[0].sampling().skip_special_tokens());
  // vLLM's skip_special_tokens reaches the sampling only when sent.
  c = ParseCompletionRequest(R"({"prompt": "a", "skip_special_tokens": false})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->requests[0].sampling().has_skip_special_tokens());
  EXPECT_FALSE(c->requests[0].sampling().skip_special_tokens());
  c = ParseCompletionRequest(R"({"prompt": "a"})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->requests[0].sampling().has_skip_special_tokens());
  for (const auto& [body, message] : std::vector<std::pair<std::string, std::string>>{
           {R"({"prompt": "a", "allowed_token_ids": []})", "allowed_token_ids: empty"},
           {R"({"prompt": "a", "allowed_token_ids": 7})", "allowed_token_ids"},
           {R"({"prompt": "a", "allowed_token_ids": [1, "2"]})", "allowed_token_ids[1]"},
           {R"({"prompt": "a", "bad_words": "x"})", "bad_words"},
           {R"({"prompt": "a", "bad_words": ["x", 3]})", "bad_words[1]"},
           {R"({"prompt": "a", "use_beam_search": true})",
            "use_beam_search: not supported (beam search is not implemented)"},
           {R"({"prompt": "a", "priority": -5})", "priority: not supported (requests are served first come, first served)"},
           {R"({"prompt": "a", "priority": "high"})", "priority: not supported"}}) {
    absl::StatusOr<CompletionCall> bad = ParseCompletionRequest(body);
    ASSERT_FALSE(bad.ok()) << body;
    EXPECT_THAT(std::string(bad.status().message()), HasSubstr(message)) << body;
  }
}

// echo with max_tokens 0 scores the prompt only: one token is generated (the
// scores come with it) and dropped from text, logprobs and usage.
TEST(OpenAiCompletionsTest, EchoWithZeroMaxTokensScoresThePromptOnly) {
  absl::StatusOr<CompletionCall> c =
      ParseCompletionRequest(R"({"prompt": "Hi there", "echo": true, "logprobs": 1, "max_tokens": 0})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->format.drop_generated);
  EXPECT_EQ(c->requests[0].sampling().max_new_tokens(), 1);
  std::vector<v1::GenerateResponse> chunks = ThreeChunksWithPrompt();
  for (v1::GenerateResponse& chunk : chunks) DropGenerated(c->format, &chunk);
  json j = CompletionResponse({chunks}, CompletionIdentity{"cmpl-z", 1, "m"}, c->format, c->requests);
  EXPECT_EQ(j["choices"][0]["text"], "Hi there");
  EXPECT_EQ(j["choices"][0]["logprobs"]["tokens"], json({"", "Hi", " there"}));
  EXPECT_EQ(j["usage"]["completion_tokens"], 0);
  EXPECT_EQ(j["usage"]["prompt_tokens"], 4);
  // Without echo, max_tokens 0 stays the core's to refuse.
  c = ParseCompletionRequest(R"({"prompt": "Hi", "max_tokens": 0})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->format.drop_generated);
  EXPECT_EQ(c->requests[0].sampling().max_new_tokens(), 0);
}

TEST(OpenAiCompletionsTest, BatchResponseHasOneChoicePerPromptAndSummedUsage) {
  const CompletionIdentity id{"cmpl-b", 1, "m"};
  std::vector<v1::GenerateResponse> second = ThreeChunks();
  second[0].set_text("Two");
  json j = CompletionResponse(std::vector<std::vector<v1::GenerateResponse>>{ThreeChunks(), second}, id,
                              CompletionFormat{});
  ASSERT_EQ(j["choices"].size(), 2u);
  EXPECT_EQ(j["choices"][0]["index"], 0);
  EXPECT_EQ(j["choices"][0]["text"], "Once upon a");
  EXPECT_EQ(j["choices"][1]["index"], 1);
  EXPECT_EQ(j["choices"][1]["text"], "Two upon a");
  EXPECT_EQ(j["usage"]["prompt_tokens"], 8);
  EXPECT_EQ(j["usage"]["completion_tokens"], 6);
  EXPECT_EQ(j["usage"]["total_tokens"], 14);
  EXPECT_EQ(j["usage"]["peak_kv_cache_bytes"], 16384);
}

TEST(OpenAiCompletionsTest, StreamChunks) {
  const CompletionIdentity id{"cmpl-2", 5, "m"};
  const std::vector<v1::GenerateResponse> chunks = ThreeChunks();
  json first = CompletionChunk(chunks[0], id, CompletionFormat{}, 0);
  EXPECT_EQ(first["choices"][0]["text"], "Once");
  EXPECT_TRUE(first["choices"][0]["finish_reason"].is_null());
  EXPECT_FALSE(first.contains("usage"));
  json last = CompletionChunk(chunks[2], id, CompletionFormat{.logprobs = true}, 9);
  EXPECT_EQ(last["choices"][0]["finish_reason"], "length");
  EXPECT_EQ(last["choices"][0]["logprobs"]["text_offset"], json({9}));
  EXPECT_EQ(last["usage"]["peak_kv_cache_bytes"], 8192);
  // One choice of several: its index, and no usage (the usage chunk ends
  // such a stream).
  json of_many = CompletionChunk(chunks[2], id, CompletionFormat{}, 9, /*index=*/3, ChunkUsage::kNone);
  EXPECT_EQ(of_many["choices"][0]["index"], 3);
  EXPECT_EQ(of_many["choices"][0]["finish_reason"], "length");
  EXPECT_FALSE(of_many.contains("usage"));
  v1::GenerateUsage total;
  AddCompletionUsage(chunks[2].usage(), &total);
  AddCompletionUsage(chunks[2].usage(), &total);
  json usage = CompletionUsageChunk(total, id);
  EXPECT_EQ(usage["id"], "cmpl-2");
  EXPECT_TRUE(usage["choices"].is_array() && usage["choices"].empty());
  EXPECT_EQ(usage["usage"]["completion_tokens"], 6);
  EXPECT_EQ(usage["usage"]["total_tokens"], 14);
  EXPECT_EQ(usage["usage"]["peak_kv_cache_bytes"], 16384);
}

TEST(OpenAiCompletionsTest, StreamOptionsIncludeUsage) {
  absl::StatusOr<CompletionCall> c = ParseCompletionRequest(
      R"({"model": "m", "prompt": "x", "stream": true, "stream_options": {"include_usage": true, "other": 1}})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->include_usage);
  c = ParseCompletionRequest(R"({"model": "m", "prompt": "x", "stream": true, "stream_options": {}})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->include_usage);
  c = ParseCompletionRequest(
      R"({"model": "m", "prompt": "x", "stream": true, "stream_options": {"continuous_usage_stats": false}})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->continuous_usage);
  // vLLM's continuous usage counts only with include_usage.
  c = ParseCompletionRequest(
      R"({"model": "m", "prompt": "x", "stream": true, "stream_options": {"continuous_usage_stats": true}})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->continuous_usage);
  c = ParseCompletionRequest(R"({"model": "m", "prompt": "x", "stream": true,)"
                             R"( "stream_options": {"continuous_usage_stats": true, "include_usage": true}})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->continuous_usage);
  c = ParseCompletionRequest(R"({"model": "m", "prompt": "x", "stream": false, "stream_options": null})");
  ASSERT_TRUE(c.ok()) << c.status();

  // OpenAI: with include_usage every other chunk has "usage": null, the
  // last one included.
  const CompletionIdentity id{"cmpl-3", 5, "m"};
  const std::vector<v1::GenerateResponse> chunks = ThreeChunks();
  for (const v1::GenerateResponse& chunk : chunks) {
    json j = CompletionChunk(chunk, id, CompletionFormat{}, 0, 0, ChunkUsage::kNull);
    ASSERT_TRUE(j.contains("usage"));
    EXPECT_TRUE(j["usage"].is_null());
  }
}

// vLLM's stop_reason on each choice: the stop string or token id, else null.
TEST(OpenAiCompletionsTest, StopReason) {
  const CompletionIdentity id{"cmpl-4", 5, "m"};
  std::vector<v1::GenerateResponse> chunks = ThreeChunks();
  chunks[2].set_finish_reason(v1::FINISH_REASON_STOP_STRING);
  chunks[2].set_stop_string("The end");
  json last = CompletionChunk(chunks[2], id, CompletionFormat{}, 9);
  EXPECT_EQ(last["choices"][0]["stop_reason"], "The end");
  EXPECT_EQ(last["choices"][0]["finish_reason"], "stop");
  json first = CompletionChunk(chunks[0], id, CompletionFormat{}, 0);
  ASSERT_TRUE(first["choices"][0].contains("stop_reason"));
  EXPECT_TRUE(first["choices"][0]["stop_reason"].is_null());
  json whole = CompletionResponse({chunks}, id, CompletionFormat{});
  EXPECT_EQ(whole["choices"][0]["stop_reason"], "The end");
  chunks[2].set_finish_reason(v1::FINISH_REASON_STOP_TOKEN);
  chunks[2].set_stop_token_id(12);
  whole = CompletionResponse({chunks}, id, CompletionFormat{});
  EXPECT_EQ(whole["choices"][0]["stop_reason"], 12);
  chunks[2].clear_stop_reason();
  chunks[2].set_finish_reason(v1::FINISH_REASON_EOS);
  whole = CompletionResponse({chunks}, id, CompletionFormat{});
  EXPECT_TRUE(whole["choices"][0]["stop_reason"].is_null());

  absl::StatusOr<CompletionCall> c =
      ParseCompletionRequest(R"({"model": "m", "prompt": "x", "stop": "y", "include_stop_str_in_output": true})");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->requests[0].sampling().include_stop_str_in_output());
  c = ParseCompletionRequest(R"({"model": "m", "prompt": "x", "include_stop_str_in_output": "yes"})");
  EXPECT_THAT(c.status().message(), HasSubstr("include_stop_str_in_output: must be a boolean"));
}

TEST(OpenAiCompletionsTest, FinishReasons) {
  EXPECT_STREQ(OpenAiFinishReason(v1::FINISH_REASON_LENGTH), "length");
  EXPECT_STREQ(OpenAiFinishReason(v1::FINISH_REASON_CONTEXT_LENGTH), "length");
  EXPECT_STREQ(OpenAiFinishReason(v1::FINISH_REASON_EOS), "stop");
  EXPECT_STREQ(OpenAiFinishReason(v1::FINISH_REASON_STOP_STRING), "stop");
  EXPECT_STREQ(OpenAiFinishReason(v1::FINISH_REASON_STOP_TOKEN), "stop");
}

TEST(OpenAiModelsTest, ListsLoadedModels) {
  json j = ModelsResponse({{"stories260K", 512}, {"", 0}, {"all-MiniLM-L6-v2", 0}}, 42);
  EXPECT_EQ(j["object"], "list");
  ASSERT_EQ(j["data"].size(), 2u);
  EXPECT_EQ(j["data"][0]["id"], "stories260K");
  EXPECT_EQ(j["data"][0]["object"], "model");
  EXPECT_EQ(j["data"][0]["owned_by"], "attnserve");
  EXPECT_EQ(j["data"][0]["max_model_len"], 512);
  EXPECT_EQ(j["data"][1]["id"], "all-MiniLM-L6-v2");
  EXPECT_FALSE(j["data"][1].contains("max_model_len"));
}

TEST(OpenAiErrorsTest, CoreMessagesGainTheOpenAiFieldName) {
  absl::Status s = WithOpenAiFieldNames(
      absl::InvalidArgumentError("sampling.max_new_tokens: -3 is outside [1, 256]"));
  EXPECT_THAT(s.message(), HasSubstr("sampling.max_new_tokens"));
  EXPECT_THAT(s.message(), HasSubstr("'max_tokens'"));
  const absl::Status other = absl::ResourceExhaustedError("max_new_tokens queue");
  EXPECT_EQ(WithOpenAiFieldNames(other), other);
}

}  // namespace
}  // namespace attnserve
