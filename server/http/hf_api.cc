#include "server/http/hf_api.h"

#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "server/http/json_body.h"
#include "server/http/json_fields.h"
#include "server/status_util.h"

namespace attnserve {
namespace {

using nlohmann::json;

// TGI's ranges, which are open where attnserve's are closed: 0 < temperature,
// 0 < top_p < 1, top_k > 0 (a value at the edge means "off" to attnserve but
// is an error to TGI).
absl::Status CheckOpenRange(const char* field, float v, float low, float high) {
  if (!(v > low && v < high)) {
    return absl::InvalidArgumentError(absl::StrCat(field, " = ", v, ": must be > ", low, " and < ", high));
  }
  return absl::OkStatus();
}

absl::StatusOr<uint64_t> SeedField(const json& value, absl::string_view field) {
  if (!value.is_number_integer()) return TypeError(field, "an integer", value);
  if (!value.is_number_unsigned()) return absl::InvalidArgumentError(absl::StrCat(field, ": must be >= 0"));
  return value.get<uint64_t>();
}

// Refuses `field` of `parameters` unless absent or equal to `neutral`.
absl::Status RefuseUnless(const json& parameters, const char* field, const json& neutral, absl::string_view why) {
  const json* value = Field(parameters, field);
  if (value == nullptr || *value == neutral) return absl::OkStatus();
  return Unsupported(absl::StrCat("parameters.", field), why);
}

absl::Status ParseStop(const json& parameters, v1::SamplingParams* sampling) {
  const json* stop = Field(parameters, "stop");
  if (stop == nullptr) return absl::OkStatus();
  if (!stop->is_array()) return TypeError("parameters.stop", "an array of strings", *stop);
  for (size_t i = 0; i < stop->size(); ++i) {
    if (!(*stop)[i].is_string()) return TypeError(absl::StrCat("parameters.stop[", i, "]"), "a string", (*stop)[i]);
    sampling->add_stop((*stop)[i].get<std::string>());
  }
  // TGI's text keeps the stop sequence that ended it.
  sampling->set_include_stop_str_in_output(true);
  return absl::OkStatus();
}

// Greedy unless do_sample or a sampling option is given, as TGI's
// NextTokenChooser decides; a sampled request reports its seed.
absl::Status ParseSampling(const json& parameters, uint64_t random_seed, TgiCall* call) {
  v1::SamplingParams* sampling = call->request.mutable_sampling();
  bool do_sample = false;
  RETURN_IF_ERROR(Optional<bool>(parameters, "do_sample", BoolField, [&](bool v) { do_sample = v; }));
  bool warpers = false;
  std::optional<float> temperature;
  RETURN_IF_ERROR(Optional<float>(parameters, "temperature", FloatField, [&](float v) { temperature = v; }));
  if (temperature.has_value()) {
    if (!(*temperature > 0)) {
      return absl::InvalidArgumentError(
          absl::StrCat("parameters.temperature = ", *temperature, ": must be > 0 (TGI's range)"));
    }
    warpers |= *temperature != 1.0f;
  }
  if (const json* k = Field(parameters, "top_k"); k != nullptr) {
    ASSIGN_OR_RETURN(const int32_t top_k, Int32Field(*k, "parameters.top_k"));
    if (top_k <= 0) return absl::InvalidArgumentError(absl::StrCat("parameters.top_k = ", top_k, ": must be > 0"));
    sampling->set_top_k(top_k);
    warpers = true;
  }
  if (const json* p = Field(parameters, "top_p"); p != nullptr) {
    ASSIGN_OR_RETURN(const float top_p, FloatField(*p, "parameters.top_p"));
    RETURN_IF_ERROR(CheckOpenRange("parameters.top_p", top_p, 0, 1));
    sampling->set_top_p(top_p);
    warpers = true;
  }
  if (const json* p = Field(parameters, "typical_p"); p != nullptr) {
    ASSIGN_OR_RETURN(const float typical_p, FloatField(*p, "parameters.typical_p"));
    RETURN_IF_ERROR(CheckOpenRange("parameters.typical_p", typical_p, 0, 1));
    sampling->set_typical_p(typical_p);
    warpers = true;
  }
  if (const json* seed = Field(parameters, "seed"); seed != nullptr) {
    ASSIGN_OR_RETURN(const uint64_t s, SeedField(*seed, "parameters.seed"));
    call->seed = s;
  }
  if (do_sample || warpers) {
    sampling->set_temperature(temperature.value_or(1.0f));
    if (!call->seed.has_value()) call->seed = random_seed;
    sampling->set_seed(*call->seed);
  } else {
    sampling->set_temperature(0.0f);
    call->seed.reset();  // TGI reports no seed for a greedy request
  }
  return absl::OkStatus();
}

// TGI's grammar: {"type": "json", "value": schema (an object or its text)}
// is JSON schema mode; the schema's text is taken from the body again, in
// order (nlohmann::json, which `parameters` is, sorts keys).
// {"type": "regex", "value": "..."} holds the whole output to the regex.
absl::Status ParseGrammar(const json& parameters, absl::string_view body, v1::SamplingParams* sampling) {
  const json* grammar = Field(parameters, "grammar");
  if (grammar == nullptr || grammar->is_null()) return absl::OkStatus();
  if (!grammar->is_object()) return TypeError("parameters.grammar", "an object", *grammar);
  const json* type = Field(*grammar, "type");
  if (type != nullptr && type->is_string() && type->get<std::string>() == "regex") {
    const json* value = Field(*grammar, "value");
    if (value == nullptr || !value->is_string()) {
      return absl::InvalidArgumentError("parameters.grammar.value: required, a regular expression (a string)");
    }
    sampling->set_response_format(v1::RESPONSE_FORMAT_REGEX);
    sampling->set_regex(value->get<std::string>());
    return absl::OkStatus();
  }
  if (type == nullptr || !type->is_string() || type->get<std::string>() != "json") {
    return Unsupported("parameters.grammar",
                       "only {\"type\": \"json\", \"value\": <JSON schema>} and {\"type\": \"regex\", \"value\": "
                       "<regex>}");
  }
  const json* value = Field(*grammar, "value");
  if (value == nullptr || !(value->is_object() || value->is_string())) {
    return absl::InvalidArgumentError("parameters.grammar.value: required, a JSON schema (an object or its text)");
  }
  nlohmann::ordered_json v = nlohmann::ordered_json::parse(body.begin(), body.end(), nullptr, false);
  for (const char* key : {"parameters", "grammar", "value"}) v = v.is_object() && v.contains(key) ? v[key] : nlohmann::ordered_json();
  sampling->set_response_format(v1::RESPONSE_FORMAT_JSON_SCHEMA);
  sampling->set_json_schema(v.is_string() ? v.get<std::string>() : v.dump());
  return absl::OkStatus();
}

absl::Status ParseParameters(const json& parameters, absl::string_view body, uint64_t random_seed, TgiCall* call) {
  if (!parameters.is_object()) return TypeError("parameters", "an object", parameters);
  v1::SamplingParams* sampling = call->request.mutable_sampling();
  RETURN_IF_ERROR(ParseSampling(parameters, random_seed, call));
  sampling->set_max_new_tokens(kTgiDefaultMaxNewTokens);
  RETURN_IF_ERROR(Optional<int32_t>(parameters, "max_new_tokens", Int32Field,
                                    [&](int32_t v) { sampling->set_max_new_tokens(v); }));
  RETURN_IF_ERROR(Optional<float>(parameters, "repetition_penalty", FloatField,
                                  [&](float v) { sampling->set_repetition_penalty(v); }));
  // TGI's frequency penalty is another formula than OpenAI's (the count over
  // prompt and output divided by their length); only OpenAI's is here.
  RETURN_IF_ERROR(RefuseUnless(parameters, "frequency_penalty", 0,
                               "TGI's formula is not implemented; /v1/completions has OpenAI's"));
  RETURN_IF_ERROR(ParseStop(parameters, sampling));
  RETURN_IF_ERROR(Optional<int32_t>(parameters, "truncate", Int32Field,
                                    [&](int32_t v) { call->request.set_truncate_prompt_tokens(v); }));
  RETURN_IF_ERROR(Optional<bool>(parameters, "details", BoolField, [&](bool v) { call->details = v; }));
  RETURN_IF_ERROR(Optional<bool>(parameters, "decoder_input_details", BoolField,
                                 [&](bool v) { call->decoder_input_details = v; }));
  RETURN_IF_ERROR(
      Optional<bool>(parameters, "return_full_text", BoolField, [&](bool v) { call->return_full_text = v; }));
  RETURN_IF_ERROR(
      Optional<int32_t>(parameters, "top_n_tokens", Int32Field, [&](int32_t v) { call->top_n_tokens = v; }));
  if (call->top_n_tokens < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("parameters.top_n_tokens = ", call->top_n_tokens, ": must be >= 0"));
  }
  RETURN_IF_ERROR(RefuseUnless(parameters, "best_of", 1, "only one sequence per request"));
  RETURN_IF_ERROR(RefuseUnless(parameters, "watermark", false, "watermarking is not implemented"));
  RETURN_IF_ERROR(ParseGrammar(parameters, body, call->request.mutable_sampling()));
  RETURN_IF_ERROR(RefuseUnless(parameters, "adapter_id", json(), "no LoRA adapters are loaded"));
  return absl::OkStatus();
}

std::string TokenText(const v1::GenerateResponse& chunk, int i) {
  // A message holds one token, whose text is the message's; were there
  // several, the text goes with the last so the texts still join to the
  // generated text.
  return i + 1 == chunk.token_ids_size() ? SanitizeUtf8(chunk.text()) : "";
}

json TokenJson(const v1::GenerateResponse& chunk, int i) {
  const bool last = i + 1 == chunk.token_ids_size();
  return json{{"id", chunk.token_ids(i)},
              {"text", TokenText(chunk, i)},
              {"logprob", i < chunk.logprobs_size() ? json(chunk.logprobs(i).logprob()) : json()},
              // The end-of-sequence token (its text is empty here) is the
              // special one a client skips.
              {"special", last && chunk.finish_reason() == v1::FINISH_REASON_EOS}};
}

json TopTokensJson(const v1::GenerateResponse& chunk, int i) {
  json top = json::array();
  if (i >= chunk.logprobs_size()) return top;
  for (const v1::TokenLogprob& alt : chunk.logprobs(i).top()) {
    top.push_back(json{{"id", alt.token_id()},
                       {"text", SanitizeUtf8(alt.text())},
                       {"logprob", alt.logprob()},
                       {"special", false}});
  }
  return top;
}

json SeedJson(const TgiCall& call) { return call.seed.has_value() ? json(*call.seed) : json(); }

}  // namespace

absl::StatusOr<TgiCall> ParseTgiGenerateRequest(absl::string_view body, uint64_t random_seed, bool stream_route) {
  ASSIGN_OR_RETURN(const json root, ParseJsonObject(body));
  TgiCall call;
  const json* inputs = Field(root, "inputs");
  if (inputs == nullptr) return absl::InvalidArgumentError("inputs: required");
  if (!inputs->is_string()) return TypeError("inputs", "a string", *inputs);
  call.inputs = inputs->get<std::string>();
  if (call.inputs.empty()) return absl::InvalidArgumentError("inputs: must not be empty");
  call.request.set_text(call.inputs);
  RETURN_IF_ERROR(Optional<bool>(root, "stream", BoolField, [&](bool v) { call.stream = v; }));
  call.stream |= stream_route;
  const json* parameters = Field(root, "parameters");
  RETURN_IF_ERROR(ParseParameters(parameters != nullptr ? *parameters : json::object(), body, random_seed, &call));
  if (call.decoder_input_details && call.stream) {
    return Unsupported("parameters.decoder_input_details", "not when streaming tokens, as TGI");
  }
  v1::SamplingParams* sampling = call.request.mutable_sampling();
  // Each token's logprob is in the stream events and in details.
  if (call.details || call.stream) sampling->set_logprobs(true);
  sampling->set_top_logprobs(call.top_n_tokens);
  if (call.details && call.decoder_input_details) sampling->set_prompt_logprobs(true);
  return call;
}

const char* TgiFinishReason(v1::FinishReason reason) {
  switch (reason) {
    case v1::FINISH_REASON_EOS:
    case v1::FINISH_REASON_STOP_TOKEN: return "eos_token";
    case v1::FINISH_REASON_STOP_STRING: return "stop_sequence";
    default: return "length";
  }
}

json TgiGenerateResponse(const std::vector<v1::GenerateResponse>& chunks, const TgiCall& call) {
  std::string text = call.return_full_text ? call.inputs : "";
  json tokens = json::array(), top_tokens = json::array(), prefill = json::array();
  v1::FinishReason finish = v1::FINISH_REASON_UNSPECIFIED;
  for (const v1::GenerateResponse& chunk : chunks) {
    text += chunk.text();
    for (int i = 0; i < chunk.token_ids_size(); ++i) {
      tokens.push_back(TokenJson(chunk, i));
      top_tokens.push_back(TopTokensJson(chunk, i));
    }
    for (int p = 0; p < chunk.prompt_tokens_size(); ++p) {
      const v1::PromptToken& t = chunk.prompt_tokens(p);
      prefill.push_back(json{{"id", t.token_id()},
                             {"text", SanitizeUtf8(t.text())},
                             {"logprob", t.has_logprobs() ? json(t.logprobs().logprob()) : json()}});
    }
    if (chunk.finish_reason() != v1::FINISH_REASON_UNSPECIFIED) finish = chunk.finish_reason();
  }
  json out{{"generated_text", SanitizeUtf8(text)}};
  if (!call.details) return out;
  json details{{"finish_reason", TgiFinishReason(finish)},
               {"generated_tokens", tokens.size()},
               {"seed", SeedJson(call)},
               {"prefill", std::move(prefill)},
               {"tokens", std::move(tokens)}};
  if (call.top_n_tokens > 0) details["top_tokens"] = std::move(top_tokens);
  out["details"] = std::move(details);
  return out;
}

std::vector<json> TgiStreamEvents(const v1::GenerateResponse& chunk, const TgiCall& call, int tokens_before,
                                  const std::string& text_before) {
  std::vector<json> events;
  const bool ends = chunk.finish_reason() != v1::FINISH_REASON_UNSPECIFIED;
  for (int i = 0; i < chunk.token_ids_size(); ++i) {
    // TGI counts events from 1.
    json event{{"index", tokens_before + i + 1},
               {"token", TokenJson(chunk, i)},
               {"generated_text", json()},
               {"details", json()}};
    if (call.top_n_tokens > 0) event["top_tokens"] = TopTokensJson(chunk, i);
    if (ends && i + 1 == chunk.token_ids_size()) {
      const std::string prefix = call.return_full_text ? call.inputs : "";
      event["generated_text"] = SanitizeUtf8(prefix + text_before + chunk.text());
      event["details"] = json{{"finish_reason", TgiFinishReason(chunk.finish_reason())},
                              {"generated_tokens", tokens_before + chunk.token_ids_size()},
                              {"seed", SeedJson(call)},
                              {"input_length", chunk.usage().prompt_tokens()}};
    }
    events.push_back(std::move(event));
  }
  return events;
}

int TgiHttpStatus(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument: return 422;
    case absl::StatusCode::kInternal:
    case absl::StatusCode::kUnknown:
    case absl::StatusCode::kFailedPrecondition: return 424;
    default: return ToHttpStatus(code);
  }
}

json TgiError(const absl::Status& status) {
  const char* type = "generation";
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument: type = "validation"; break;
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kUnavailable: type = "overloaded"; break;
    default: break;
  }
  return json{{"error", SanitizeUtf8(status.message())}, {"error_type", type}};
}

absl::Status ReadTeiTruncation(const json& object, v1::EncodeRequest* request) {
  bool truncate = false;
  RETURN_IF_ERROR(Optional<bool>(object, "truncate", BoolField, [&](bool v) { truncate = v; }));
  request->set_truncation(truncate ? v1::TRUNCATION_END : v1::TRUNCATION_NONE);
  if (const json* direction = Field(object, "truncation_direction"); direction != nullptr) {
    if (!direction->is_string()) return TypeError("truncation_direction", "\"right\" or \"left\"", *direction);
    const std::string d = absl::AsciiStrToLower(direction->get<std::string>());
    if (d != "right" && d != "left") {
      return absl::InvalidArgumentError(absl::StrCat("truncation_direction: '", SanitizeUtf8(d),
                                                     "' is not one of \"right\", \"left\""));
    }
    if (d == "left" && truncate) request->set_truncation(v1::TRUNCATION_START);
  }
  RETURN_IF_ERROR(Optional<std::string>(object, "prompt_name", StringField,
                                        [&](std::string v) { request->set_prompt_name(std::move(v)); }));
  return absl::OkStatus();
}

namespace {

// TEI's {"inputs", "truncate", "truncation_direction", "prompt_name"},
// shared by /embed and /embed_all.
absl::StatusOr<std::pair<json, v1::EncodeRequest>> ParseTeiInputs(absl::string_view body) {
  ASSIGN_OR_RETURN(json root, ParseJsonObject(body));
  v1::EncodeRequest request;
  const json* inputs = Field(root, "inputs");
  if (inputs == nullptr) return absl::InvalidArgumentError("inputs: required");
  RETURN_IF_ERROR(AddEncodeInputs(*inputs, "inputs", &request));
  if (request.inputs_size() == 0) return absl::InvalidArgumentError("inputs: must not be empty");
  RETURN_IF_ERROR(ReadTeiTruncation(root, &request));
  return std::make_pair(std::move(root), std::move(request));
}

}  // namespace

absl::StatusOr<v1::EncodeRequest> ParseTeiEmbedRequest(absl::string_view body) {
  ASSIGN_OR_RETURN(auto parsed, ParseTeiInputs(body));
  auto& [root, request] = parsed;
  bool normalize = true;
  RETURN_IF_ERROR(Optional<bool>(root, "normalize", BoolField, [&](bool v) { normalize = v; }));
  request.set_normalize(normalize);
  RETURN_IF_ERROR(ReadEmbeddingDimensions(root, &request));
  return std::move(request);
}

json TeiEmbedResponse(const v1::EncodeResponse& response) {
  json out = json::array();
  for (const v1::EncodeResult& result : response.results()) {
    const auto& values = result.embedding().values();
    out.push_back(json(std::vector<float>(values.begin(), values.end())));
  }
  return out;
}

absl::StatusOr<v1::EncodeRequest> ParseTeiEmbedAllRequest(absl::string_view body) {
  ASSIGN_OR_RETURN(auto parsed, ParseTeiInputs(body));
  v1::EncodeRequest& request = parsed.second;
  request.set_pooling(v1::POOLING_NONE);
  // The last layer's states as they are: the model's Normalize module (which
  // the encoder applies by default) belongs to the pooled embedding.
  request.set_normalize(false);
  return std::move(request);
}

json TeiEmbedAllResponse(const v1::EncodeResponse& response) {
  json out = json::array();
  for (const v1::EncodeResult& result : response.results()) {
    const v1::Tensor& states = result.embedding();
    const int64_t width = states.shape_size() == 2 ? states.shape(1) : 0;
    json rows = json::array();
    for (int64_t start = 0; width > 0 && start + width <= states.values_size(); start += width) {
      rows.push_back(json(std::vector<float>(states.values().begin() + start,
                                             states.values().begin() + start + width)));
    }
    out.push_back(std::move(rows));
  }
  return out;
}

absl::StatusOr<v1::EncodeRequest> ParseTeiEmbedSparseRequest(absl::string_view body) {
  ASSIGN_OR_RETURN(auto parsed, ParseTeiInputs(body));
  v1::EncodeRequest& request = parsed.second;
  request.set_pooling(v1::POOLING_SPLADE);
  return std::move(request);
}

json TeiEmbedSparseResponse(const v1::EncodeResponse& response) {
  json out = json::array();
  for (const v1::EncodeResult& result : response.results()) {
    const v1::SparseEmbedding& sparse = result.sparse_embedding();
    json entries = json::array();
    for (int k = 0; k < sparse.indices_size() && k < sparse.values_size(); ++k) {
      entries.push_back(json{{"index", sparse.indices(k)}, {"value", sparse.values(k)}});
    }
    out.push_back(std::move(entries));
  }
  return out;
}

json TeiError(const absl::Status& status) {
  const char* type = "Backend";
  switch (status.code()) {
    case absl::StatusCode::kInvalidArgument: type = "Validation"; break;
    case absl::StatusCode::kResourceExhausted: type = "Overloaded"; break;
    case absl::StatusCode::kUnavailable: type = "Unhealthy"; break;
    default: break;
  }
  return json{{"error", SanitizeUtf8(status.message())}, {"error_type", type}};
}

}  // namespace attnserve
