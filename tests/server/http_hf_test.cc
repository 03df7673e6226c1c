// The TGI and TEI surfaces' pure mapping (server/http/hf_api.h): request
// bodies onto attnserve.v1 messages, answers back into TGI's and TEI's JSON.
// The real clients run against the binary in tests/integration/test_http_hf.py.
#include "server/http/hf_api.h"
#include "server/http/hf_info.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;

TEST(TgiRequestTest, GreedyUnlessDoSampleOrASamplingOption) {
  absl::StatusOr<TgiCall> c = ParseTgiGenerateRequest(R"({"inputs": "Once"})", 99);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->request.text(), "Once");
  EXPECT_EQ(c->request.sampling().temperature(), 0.0f);
  EXPECT_EQ(c->request.sampling().max_new_tokens(), kTgiDefaultMaxNewTokens);
  EXPECT_FALSE(c->seed.has_value());
  EXPECT_FALSE(c->request.sampling().logprobs());
  EXPECT_FALSE(c->stream);

  // temperature 1 is no warper: still greedy, and a seed is not reported.
  c = ParseTgiGenerateRequest(R"({"inputs": "x", "parameters": {"temperature": 1.0, "seed": 5}})", 99);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->request.sampling().temperature(), 0.0f);
  EXPECT_FALSE(c->seed.has_value());

  c = ParseTgiGenerateRequest(R"({"inputs": "x", "parameters": {"do_sample": true}})", 99);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->request.sampling().temperature(), 1.0f);
  EXPECT_EQ(c->request.sampling().seed(), 99u);  // the drawn seed, reported
  EXPECT_EQ(c->seed, 99u);

  c = ParseTgiGenerateRequest(
      R"({"inputs": "x", "parameters": {"top_p": 0.9, "temperature": 0.7, "seed": 3, "top_k": 4}})", 99);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->request.sampling().has_typical_p());
  EXPECT_FLOAT_EQ(c->request.sampling().temperature(), 0.7f);
  EXPECT_FLOAT_EQ(c->request.sampling().top_p(), 0.9f);
  EXPECT_EQ(c->request.sampling().top_k(), 4);
  EXPECT_EQ(c->seed, 3u);

  c = ParseTgiGenerateRequest(R"({"inputs": "x", "parameters": {"typical_p": 0.5}})", 42);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FLOAT_EQ(c->request.sampling().typical_p(), 0.5f);
  EXPECT_EQ(c->request.sampling().temperature(), 1.0f);  // a warper: sampling
  EXPECT_EQ(c->seed, 42u);
}

TEST(TgiRequestTest, OptionsMapOntoTheGenerateRequest) {
  absl::StatusOr<TgiCall> c = ParseTgiGenerateRequest(
      R"({"inputs": "x", "stream": true, "parameters": {"max_new_tokens": 7, "repetition_penalty": 1.2,
          "stop": ["\n", "The"], "truncate": 30, "details": true, "top_n_tokens": 2, "return_full_text": true,
          "best_of": 1, "watermark": false, "grammar": null, "unknown_option": 1}})",
      0);
  ASSERT_TRUE(c.ok()) << c.status();
  const v1::SamplingParams& s = c->request.sampling();
  EXPECT_EQ(s.max_new_tokens(), 7);
  EXPECT_FLOAT_EQ(s.repetition_penalty(), 1.2f);
  EXPECT_THAT(s.stop(), ::testing::ElementsAre("\n", "The"));
  EXPECT_TRUE(s.include_stop_str_in_output());  // TGI keeps the stop sequence
  EXPECT_EQ(c->request.truncate_prompt_tokens(), 30);
  EXPECT_TRUE(s.logprobs());
  EXPECT_EQ(s.top_logprobs(), 2);
  EXPECT_TRUE(c->stream && c->details && c->return_full_text);
  EXPECT_FALSE(s.prompt_logprobs());

  c = ParseTgiGenerateRequest(R"({"inputs": "x", "parameters": {"details": true, "decoder_input_details": true}})",
                              0);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->request.sampling().prompt_logprobs());
  // /generate_stream streams whatever the body says.
  c = ParseTgiGenerateRequest(R"({"inputs": "x"})", 0, /*stream_route=*/true);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->stream);
  EXPECT_TRUE(c->request.sampling().logprobs());
}

TEST(TgiRequestTest, AJsonGrammarIsJsonSchemaModeInTheSchemasOrder) {
  absl::StatusOr<TgiCall> c = ParseTgiGenerateRequest(
      R"({"inputs": "x", "parameters": {"grammar": {"type": "json", "value": {"type": "object",
          "properties": {"zeta": {"type": "string"}, "alpha": {"type": "integer"}}}}}})",
      0);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->request.sampling().response_format(), v1::RESPONSE_FORMAT_JSON_SCHEMA);
  const std::string& schema = c->request.sampling().json_schema();
  EXPECT_LT(schema.find("zeta"), schema.find("alpha")) << schema;
}

TEST(TgiRequestTest, ARegexGrammarHoldsTheWholeOutput) {
  absl::StatusOr<TgiCall> c = ParseTgiGenerateRequest(
      R"({"inputs": "x", "parameters": {"grammar": {"type": "regex", "value": "\\d{3}-[A-Z]+"}}})", 0);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->request.sampling().response_format(), v1::RESPONSE_FORMAT_REGEX);
  EXPECT_EQ(c->request.sampling().regex(), "\\d{3}-[A-Z]+");
}

TEST(TgiRequestTest, BadOrUnsupportedOptionsNameTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"parameters": {}})", "inputs: required"},
      {R"({"inputs": ""})", "inputs: must not be empty"},
      {R"({"inputs": ["a"]})", "inputs: must be a string"},
      {R"({"inputs": "x", "parameters": []})", "parameters: must be an object"},
      {R"({"inputs": "x", "parameters": {"temperature": 0}})", "parameters.temperature = 0: must be > 0"},
      {R"({"inputs": "x", "parameters": {"top_p": 1}})", "parameters.top_p = 1: must be > 0 and < 1"},
      {R"({"inputs": "x", "parameters": {"top_p": 0}})", "parameters.top_p = 0"},
      {R"({"inputs": "x", "parameters": {"top_k": 0}})", "parameters.top_k = 0: must be > 0"},
      {R"({"inputs": "x", "parameters": {"typical_p": 1.0}})", "parameters.typical_p = 1: must be > 0 and < 1"},
      {R"({"inputs": "x", "parameters": {"frequency_penalty": 0.1}})", "parameters.frequency_penalty: not supported"},
      {R"({"inputs": "x", "parameters": {"best_of": 2}})", "parameters.best_of: not supported"},
      {R"({"inputs": "x", "parameters": {"watermark": true}})", "parameters.watermark: not supported"},
      {R"({"inputs": "x", "parameters": {"grammar": {"type": "lark", "value": "a+"}}})",
       "parameters.grammar: not supported (only {\"type\": \"json\", \"value\": <JSON schema>} and "
       "{\"type\": \"regex\", \"value\": <regex>})"},
      {R"({"inputs": "x", "parameters": {"grammar": {"type": "regex", "value": 3}}})",
       "parameters.grammar.value: required, a regular expression (a string)"},
      {R"({"inputs": "x", "parameters": {"grammar": {"type": "json"}}})", "parameters.grammar.value: required"},
      {R"({"inputs": "x", "parameters": {"grammar": "json"}})", "parameters.grammar: must be an object"},
      {R"({"inputs": "x", "parameters": {"adapter_id": "a"}})", "parameters.adapter_id"},
      {R"({"inputs": "x", "parameters": {"stop": "a"}})", "parameters.stop: must be an array"},
      {R"({"inputs": "x", "parameters": {"stop": [1]}})", "parameters.stop[0]: must be a string"},
      {R"({"inputs": "x", "parameters": {"seed": -1}})", "parameters.seed: must be >= 0"},
      {R"({"inputs": "x", "parameters": {"top_n_tokens": -1}})", "parameters.top_n_tokens = -1"},
      {R"({"inputs": "x", "parameters": {"max_new_tokens": "9"}})", "max_new_tokens: must be an integer"},
      {R"({"inputs": "x", "stream": true, "parameters": {"decoder_input_details": true}})",
       "parameters.decoder_input_details: not supported"},
  };
  for (const auto& [body, expected] : cases) {
    absl::StatusOr<TgiCall> c = ParseTgiGenerateRequest(body, 0);
    ASSERT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << body;
    EXPECT_THAT(c.status().message(), HasSubstr(expected)) << body;
  }
}

std::vector<v1::GenerateResponse> TwoTokens(v1::FinishReason finish) {
  std::vector<v1::GenerateResponse> chunks(2);
  chunks[0].add_token_ids(10);
  chunks[0].set_text(" upon");
  chunks[0].add_logprobs()->set_logprob(-0.5f);
  v1::PromptToken* bos = chunks[0].add_prompt_tokens();
  bos->set_token_id(1);
  v1::PromptToken* once = chunks[0].add_prompt_tokens();
  once->set_token_id(7);
  once->set_text("Once");
  once->mutable_logprobs()->set_logprob(-3.0f);
  chunks[1].add_token_ids(2);
  chunks[1].add_logprobs()->set_logprob(-0.25f);
  chunks[1].set_finish_reason(finish);
  chunks[1].mutable_usage()->set_prompt_tokens(2);
  chunks[1].mutable_usage()->set_generated_tokens(2);
  return chunks;
}

TEST(TgiResponseTest, GeneratedTextAndDetails) {
  TgiCall call;
  call.inputs = "Once";
  json plain = TgiGenerateResponse(TwoTokens(v1::FINISH_REASON_EOS), call);
  EXPECT_EQ(plain, json({{"generated_text", " upon"}}));

  call.details = true;
  call.return_full_text = true;
  call.seed = 12;
  json out = TgiGenerateResponse(TwoTokens(v1::FINISH_REASON_EOS), call);
  EXPECT_EQ(out["generated_text"], "Once upon");
  const json& d = out["details"];
  EXPECT_EQ(d["finish_reason"], "eos_token");
  EXPECT_EQ(d["generated_tokens"], 2);
  EXPECT_EQ(d["seed"], 12);
  EXPECT_EQ(d["tokens"][0], json({{"id", 10}, {"text", " upon"}, {"logprob", -0.5}, {"special", false}}));
  EXPECT_EQ(d["tokens"][1]["special"], true);  // the end-of-sequence token
  EXPECT_EQ(d["prefill"][0]["id"], 1);
  EXPECT_TRUE(d["prefill"][0]["logprob"].is_null());
  EXPECT_EQ(d["prefill"][1]["logprob"], -3.0);
  EXPECT_FALSE(d.contains("top_tokens"));
  EXPECT_FALSE(d.contains("best_of_sequences"));

  EXPECT_STREQ(TgiFinishReason(v1::FINISH_REASON_STOP_STRING), "stop_sequence");
  EXPECT_STREQ(TgiFinishReason(v1::FINISH_REASON_CONTEXT_LENGTH), "length");
  EXPECT_STREQ(TgiFinishReason(v1::FINISH_REASON_LENGTH), "length");
}

TEST(TgiResponseTest, StreamEventsCountFromOneAndTheLastCarriesTheDetails) {
  TgiCall call;
  call.inputs = "Once";
  const std::vector<v1::GenerateResponse> chunks = TwoTokens(v1::FINISH_REASON_STOP_STRING);
  std::vector<json> first = TgiStreamEvents(chunks[0], call, 0, "");
  ASSERT_EQ(first.size(), 1u);
  EXPECT_EQ(first[0]["index"], 1);
  EXPECT_EQ(first[0]["token"]["text"], " upon");
  EXPECT_TRUE(first[0]["generated_text"].is_null());
  EXPECT_TRUE(first[0]["details"].is_null());
  EXPECT_FALSE(first[0].contains("top_tokens"));
  std::vector<json> last = TgiStreamEvents(chunks[1], call, 1, " upon");
  ASSERT_EQ(last.size(), 1u);
  EXPECT_EQ(last[0]["index"], 2);
  EXPECT_EQ(last[0]["generated_text"], " upon");
  EXPECT_EQ(last[0]["details"], json({{"finish_reason", "stop_sequence"},
                                      {"generated_tokens", 2},
                                      {"seed", nullptr},
                                      {"input_length", 2}}));
}

TEST(TgiErrorTest, ShapeAndStatus) {
  EXPECT_EQ(TgiError(absl::InvalidArgumentError("bad")), json({{"error", "bad"}, {"error_type", "validation"}}));
  EXPECT_EQ(TgiError(absl::ResourceExhaustedError("full"))["error_type"], "overloaded");
  EXPECT_EQ(TgiError(absl::InternalError("x"))["error_type"], "generation");
  EXPECT_EQ(TgiHttpStatus(absl::StatusCode::kInvalidArgument), 422);
  EXPECT_EQ(TgiHttpStatus(absl::StatusCode::kResourceExhausted), 429);
  EXPECT_EQ(TgiHttpStatus(absl::StatusCode::kInternal), 424);
  EXPECT_EQ(TgiHttpStatus(absl::StatusCode::kDeadlineExceeded), 504);
}

TEST(TeiEmbedTest, RequestShapesAndDefaults) {
  absl::StatusOr<v1::EncodeRequest> r = ParseTeiEmbedRequest(R"({"inputs": "hello"})");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->inputs_size(), 1);
  EXPECT_EQ(r->inputs(0).text(), "hello");
  EXPECT_TRUE(r->normalize());                           // TEI's default
  EXPECT_EQ(r->truncation(), v1::TRUNCATION_NONE);       // truncate defaults to false
  r = ParseTeiEmbedRequest(R"({"inputs": ["a", [5, 6]], "normalize": false, "truncate": true,
                               "truncation_direction": "Right"})");
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->inputs_size(), 2);
  EXPECT_EQ(r->inputs(1).token_ids().ids_size(), 2);
  EXPECT_FALSE(r->normalize());
  EXPECT_EQ(r->truncation(), v1::TRUNCATION_END);
  EXPECT_FALSE(r->has_dimensions());
  // "left" keeps the last tokens (when truncating at all); dimensions is
  // passed on (its range is the model's, checked with the request).
  r = ParseTeiEmbedRequest(R"({"inputs": "a", "truncate": true, "truncation_direction": "Left", "dimensions": 8})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->truncation(), v1::TRUNCATION_START);
  EXPECT_EQ(r->dimensions(), 8);
  r = ParseTeiEmbedRequest(R"({"inputs": "a", "truncation_direction": "left", "prompt_name": "query"})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->truncation(), v1::TRUNCATION_NONE);
  EXPECT_EQ(r->prompt_name(), "query");

  const std::pair<const char*, const char*> bad[] = {
      {R"({})", "inputs: required"},
      {R"({"inputs": []})", "inputs: must not be empty"},
      {R"({"inputs": [1.5]})", "inputs[0]"},
      {R"({"inputs": "a", "normalize": 1})", "normalize: must be a boolean"},
      {R"({"inputs": "a", "truncation_direction": "up"})", "truncation_direction: 'up' is not one of"},
      {R"({"inputs": "a", "prompt_name": 5})", "prompt_name: must be a string"},
      {R"({"inputs": "a", "dimensions": "8"})", "dimensions: must be an integer"},
      {R"({"inputs": "a", "dimensions": 4294967296})", "dimensions: 4294967296 is out of range"},
  };
  for (const auto& [body, expected] : bad) {
    absl::StatusOr<v1::EncodeRequest> c = ParseTeiEmbedRequest(body);
    ASSERT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << body;
    EXPECT_THAT(c.status().message(), HasSubstr(expected)) << body;
  }
}

TEST(TeiEmbedTest, ResponseIsAListOfEmbeddingsAndErrorsAreTeiShaped) {
  v1::EncodeResponse response;
  for (float base : {1.0f, 2.0f}) {
    v1::EncodeResult* result = response.add_results();
    result->mutable_embedding()->add_shape(2);
    result->mutable_embedding()->add_values(base);
    result->mutable_embedding()->add_values(base + 0.5f);
  }
  EXPECT_EQ(TeiEmbedResponse(response), json({{1.0, 1.5}, {2.0, 2.5}}));
  EXPECT_EQ(TeiError(absl::InvalidArgumentError("too long")),
            json({{"error", "too long"}, {"error_type", "Validation"}}));
  EXPECT_EQ(TeiError(absl::ResourceExhaustedError("q"))["error_type"], "Overloaded");
  EXPECT_EQ(TeiError(absl::UnavailableError("d"))["error_type"], "Unhealthy");
}

TEST(TeiEmbedAllTest, TokenStatesUnpooledAndTheSameTruncationRules) {
  absl::StatusOr<v1::EncodeRequest> r = ParseTeiEmbedAllRequest(R"({"inputs": ["a b", [101, 102]], "truncate": true})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->pooling(), v1::POOLING_NONE);
  ASSERT_TRUE(r->has_normalize());  // TEI's embed_all returns the states as they are,
  EXPECT_FALSE(r->normalize());     // not the model's default (normalised for MiniLM)
  EXPECT_EQ(r->truncation(), v1::TRUNCATION_END);
  ASSERT_EQ(r->inputs_size(), 2);
  EXPECT_EQ(r->inputs(1).token_ids().ids_size(), 2);
  r = ParseTeiEmbedAllRequest(R"({"inputs": "a"})");
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ(r->truncation(), v1::TRUNCATION_NONE);
  for (const char* body : {R"({})", R"({"inputs": []})", R"({"inputs": "a", "prompt_name": 5})",
                           R"({"inputs": "a", "truncation_direction": 1})"}) {
    EXPECT_EQ(ParseTeiEmbedAllRequest(body).status().code(), absl::StatusCode::kInvalidArgument) << body;
  }

  v1::EncodeResponse response;
  v1::Tensor* states = response.add_results()->mutable_embedding();  // 2 tokens of width 3
  states->add_shape(2);
  states->add_shape(3);
  for (float v : {1.f, 2.f, 3.f, 4.f, 5.f, 6.f}) states->add_values(v);
  v1::Tensor* one = response.add_results()->mutable_embedding();  // 1 token of width 3
  one->add_shape(1);
  one->add_shape(3);
  for (float v : {7.f, 8.f, 9.f}) one->add_values(v);
  EXPECT_EQ(TeiEmbedAllResponse(response), json({{{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}}, {{7.0, 8.0, 9.0}}}));
}

// GET /info: TGI's Info from a decoder's ModelInfo and the server's limits,
// TEI's from an encoder's (its names for the dtype and the pooling).
TEST(HfInfoTest, TgiAndTeiInfoFromTheModelAndTheLimits) {
  const ServiceInfo service{.max_concurrent_requests = 300,
                            .max_stop_sequences = 16,
                            .max_prompts_per_request = 256,
                            .encode_max_batch_tokens = 8192,
                            .encode_max_batch_size = 32,
                            .encode_max_inputs_per_request = 1024,
                            .http_threads = 304,
                            .version = "0.1.0"};
  v1::ModelInfo decoder;
  decoder.set_name("stories260K");
  decoder.set_max_positions(512);
  decoder.set_max_input_tokens(511);
  EXPECT_EQ(TgiInfo(decoder, service), nlohmann::json::parse(R"({
      "model_id": "stories260K", "model_sha": null, "model_pipeline_tag": "text-generation",
      "max_concurrent_requests": 300, "max_best_of": 1, "max_stop_sequences": 16, "max_input_tokens": 511,
      "max_total_tokens": 512, "validation_workers": 304, "max_client_batch_size": 256, "router": "attnserve",
      "version": "0.1.0", "sha": null, "docker_label": null})"));
  v1::ModelInfo encoder;
  encoder.set_name("all-MiniLM-L6-v2");
  encoder.set_max_positions(512);
  encoder.set_max_input_tokens(256);
  encoder.set_weight_dtype("bf16");
  encoder.set_pooling("lasttoken");
  EXPECT_EQ(TeiInfo(encoder, service), nlohmann::json::parse(R"({
      "model_id": "all-MiniLM-L6-v2", "model_sha": null, "model_dtype": "bfloat16",
      "model_type": {"embedding": {"pooling": "last_token"}}, "max_concurrent_requests": 300,
      "max_input_length": 256, "max_batch_tokens": 8192, "max_batch_requests": 32, "max_client_batch_size": 1024,
      "auto_truncate": false, "tokenization_workers": 304, "version": "0.1.0", "sha": null, "docker_label": null})"));
  encoder.set_weight_dtype("f32");
  encoder.set_pooling("cls");
  EXPECT_EQ(TeiInfo(encoder, service)["model_dtype"], "float32");
  EXPECT_EQ(TeiInfo(encoder, service)["model_type"]["embedding"]["pooling"], "cls");
  encoder.add_labels("LABEL_0");
  EXPECT_EQ(TeiInfo(encoder, service)["model_type"],
            nlohmann::json::parse(R"({"reranker": {"id2label": {"0": "LABEL_0"}, "label2id": {"LABEL_0": 0}}})"));
  encoder.add_labels("yes");
  EXPECT_EQ(TeiInfo(encoder, service)["model_type"],
            nlohmann::json::parse(R"({"classifier": {"id2label": {"0": "LABEL_0", "1": "yes"},
                                                     "label2id": {"LABEL_0": 0, "yes": 1}}})"));
}

}  // namespace
}  // namespace attnserve
