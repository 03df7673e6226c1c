#include "server/http/openai_api.h"

#include <cstring>
#include <limits>
#include <optional>

#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "server/core/request_log.h"
#include "server/http/json_body.h"
#include "server/http/json_fields.h"

namespace attnserve {
namespace {

using nlohmann::json;

absl::Status CheckModel(const json& body) {
  if (const json* model = Field(body, "model"); model != nullptr && !model->is_string()) {
    return TypeError("model", "a string", *model);
  }
  if (const json* user = Field(body, "user"); user != nullptr && !user->is_string()) {
    return TypeError("user", "a string", *user);
  }
  return absl::OkStatus();
}

// The prompts, each in a request of its own (prompt only): a string, token
// ids, or a list of either (a batch, one completion choice per prompt).
absl::StatusOr<std::vector<v1::GenerateRequest>> ParsePrompts(const json& body) {
  const json* prompt = Field(body, "prompt");
  if (prompt == nullptr) return absl::InvalidArgumentError("prompt: required");
  std::vector<v1::GenerateRequest> out;
  if (prompt->is_string()) {
    out.emplace_back().set_text(prompt->get<std::string>());
    return out;
  }
  if (!prompt->is_array()) return TypeError("prompt", "a string or an array of token ids", *prompt);
  if (!prompt->empty() && ((*prompt)[0].is_string() || (*prompt)[0].is_array())) {
    if (prompt->size() > kMaxCompletionChoices) {
      return absl::InvalidArgumentError(absl::StrCat("prompt: a batch of ", prompt->size(),
                                                     " prompts; at most ", kMaxCompletionChoices, " per request"));
    }
    for (size_t i = 0; i < prompt->size(); ++i) {
      const json& one = (*prompt)[i];
      const std::string field = absl::StrCat("prompt[", i, "]");
      if (one.is_string()) {
        out.emplace_back().set_text(one.get<std::string>());
        continue;
      }
      if (!one.is_array()) return TypeError(field, "a string or an array of token ids", one);
      absl::StatusOr<v1::TokenIds> ids = TokenIdsField(one, field.c_str());
      if (!ids.ok()) return ids.status();
      *out.emplace_back().mutable_token_ids() = *ids;
    }
    return out;
  }
  absl::StatusOr<v1::TokenIds> ids = TokenIdsField(*prompt, "prompt");
  if (!ids.ok()) return ids.status();
  *out.emplace_back().mutable_token_ids() = *ids;
  return out;
}

absl::Status ParseStop(const json& body, v1::SamplingParams* sampling) {
  const json* stop = Field(body, "stop");
  if (stop == nullptr) return absl::OkStatus();
  if (stop->is_string()) {
    sampling->add_stop(stop->get<std::string>());
    return absl::OkStatus();
  }
  if (!stop->is_array()) return TypeError("stop", "a string or an array of strings", *stop);
  for (size_t i = 0; i < stop->size(); ++i) {
    if (!(*stop)[i].is_string()) return TypeError(absl::StrCat("stop[", i, "]"), "a string", (*stop)[i]);
    sampling->add_stop((*stop)[i].get<std::string>());
  }
  return absl::OkStatus();
}

// Options whose only supported value is the default.
absl::Status RefuseNonDefaults(const json& body) {
  if (const json* suffix = Field(body, "suffix");
      suffix != nullptr && !(suffix->is_string() && suffix->get<std::string>().empty())) {
    return Unsupported("suffix", "insertion is not implemented");
  }
  return absl::OkStatus();
}

// "stream_options": {"include_usage": bool, "continuous_usage_stats": bool}.
// As OpenAI and vLLM, only with "stream": true; other keys are ignored like
// unknown top-level fields. continuous_usage_stats counts only with
// include_usage, as vLLM has it.
absl::Status ParseStreamOptions(const json& body, CompletionCall* call) {
  const json* options = Field(body, "stream_options");
  if (options == nullptr) return absl::OkStatus();
  if (!options->is_object()) return TypeError("stream_options", "an object", *options);
  if (!call->stream) return absl::InvalidArgumentError("stream_options: only allowed with \"stream\": true");
  if (const json* u = Field(*options, "include_usage"); u != nullptr) {
    ASSIGN_OR_RETURN(call->include_usage, BoolField(*u, "stream_options.include_usage"));
  }
  if (const json* c = Field(*options, "continuous_usage_stats"); c != nullptr) {
    ASSIGN_OR_RETURN(const bool continuous, BoolField(*c, "stream_options.continuous_usage_stats"));
    call->continuous_usage = continuous && call->include_usage;
  }
  return absl::OkStatus();
}

// {"<token id>": bias, ...}: the keys are ids written as strings (JSON
// object keys are strings). The ids' range and the biases' are checked with
// the other sampling values, against the model.
absl::Status ParseLogitBias(const json& body, v1::SamplingParams* sampling) {
  const json* bias = Field(body, "logit_bias");
  if (bias == nullptr) return absl::OkStatus();
  if (!bias->is_object()) return TypeError("logit_bias", "an object of token id -> bias", *bias);
  for (const auto& [key, value] : bias->items()) {
    int32_t id = 0;
    if (key.empty() || !absl::SimpleAtoi(key, &id) || absl::StrCat(id) != key) {
      return absl::InvalidArgumentError(
          absl::StrCat("logit_bias: key \"", absl::CEscape(key.substr(0, 32)), "\" is not a token id"));
    }
    ASSIGN_OR_RETURN(const float b, FloatField(value, absl::StrCat("logit_bias[\"", key, "\"]")));
    (*sampling->mutable_logit_bias())[id] = b;
  }
  return absl::OkStatus();
}

void AppendLogprobs(const json& part, json* all) {
  for (const char* key : {"tokens", "token_logprobs", "top_logprobs", "text_offset"}) {
    for (const json& v : part[key]) (*all)[key].push_back(v);
  }
}

json EmptyLogprobs() {
  return json{{"tokens", json::array()},
              {"token_logprobs", json::array()},
              {"top_logprobs", json::array()},
              {"text_offset", json::array()}};
}

json LogprobsJson(const v1::GenerateResponse& chunk, int64_t text_offset, bool as_ids) {
  json tokens = json::array(), token_logprobs = json::array(), top = json::array(), offsets = json::array();
  for (int i = 0; i < chunk.token_ids_size(); ++i) {
    const std::string text = ChunkTokenText(chunk, i);
    json alternatives = json::object();
    if (i < chunk.logprobs_size()) {
      for (const v1::TokenLogprob& alt : chunk.logprobs(i).top()) {
        alternatives[LogprobTokenName(alt.text(), alt.token_id(), as_ids)] = alt.logprob();
      }
    }
    tokens.push_back(LogprobTokenName(text, chunk.token_ids(i), as_ids));
    token_logprobs.push_back(i < chunk.logprobs_size() ? json(chunk.logprobs(i).logprob()) : json());
    top.push_back(std::move(alternatives));
    offsets.push_back(text_offset);
    text_offset += static_cast<int64_t>(text.size());
  }
  return json{{"tokens", tokens}, {"token_logprobs", token_logprobs}, {"top_logprobs", top}, {"text_offset", offsets}};
}

// What a chunk adds to its choice: the text, and the logprobs object's
// entries when asked; with echo, the prompt first (on the chunk carrying
// its tokens): the first prompt token has null logprobs, as OpenAI's.
struct ChunkPart {
  std::string text;
  json logprobs;
};

ChunkPart Render(const v1::GenerateResponse& chunk, const CompletionFormat& format,
                 const v1::GenerateRequest* request, int64_t text_offset) {
  ChunkPart part{"", format.logprobs ? EmptyLogprobs() : json()};
  if (format.echo && chunk.prompt_tokens_size() > 0) {
    std::string joined;
    int64_t offset = text_offset;
    for (int i = 0; i < chunk.prompt_tokens_size(); ++i) {
      const v1::PromptToken& t = chunk.prompt_tokens(i);
      joined += t.text();
      if (!format.logprobs) continue;
      const bool scored = t.has_logprobs();
      json alternatives = json::object();
      // Its own "logprobs": n of them (prompt_logprobs may have asked for more).
      const int shown = request != nullptr ? request->sampling().top_logprobs() : t.logprobs().top_size();
      for (int a = 0; a < std::min(shown, t.logprobs().top_size()); ++a) {
        const v1::TokenLogprob& alt = t.logprobs().top(a);
        alternatives[LogprobTokenName(alt.text(), alt.token_id(), format.tokens_as_ids)] = alt.logprob();
      }
      part.logprobs["tokens"].push_back(LogprobTokenName(t.text(), t.token_id(), format.tokens_as_ids));
      part.logprobs["token_logprobs"].push_back(scored ? json(t.logprobs().logprob()) : json());
      part.logprobs["top_logprobs"].push_back(scored ? alternatives : json());
      part.logprobs["text_offset"].push_back(offset);
      offset += static_cast<int64_t>(t.text().size());
    }
    // A text prompt is echoed as sent (its tokens' text may differ: a
    // SentencePiece model drops the first space), unless it may have been
    // cut: then the tokens the model saw.
    part.text = request != nullptr && request->has_text() && !request->has_truncate_prompt_tokens() ? request->text()
                                                                                                    : joined;
  }
  if (format.logprobs) {
    AppendLogprobs(LogprobsJson(chunk, text_offset + static_cast<int64_t>(part.text.size()), format.tokens_as_ids),
                   &part.logprobs);
  }
  part.text += chunk.text();
  return part;
}

}  // namespace

std::string LogprobTokenName(const std::string& text, int32_t id, bool as_id) {
  return as_id ? absl::StrCat("token_id:", id) : SanitizeUtf8(text);
}

void AddTokenIds(const CompletionFormat& format, const std::vector<v1::GenerateResponse>& chunks, json* choice) {
  if (!format.return_token_ids) return;
  json ids = json::array();
  for (const v1::GenerateResponse& chunk : chunks) {
    for (int32_t id : chunk.token_ids()) ids.push_back(id);
  }
  (*choice)["token_ids"] = std::move(ids);
}

json PromptTokenIds(const v1::GenerateResponse& first) {
  return std::vector<int32_t>(first.prompt_token_ids().begin(), first.prompt_token_ids().end());
}

std::string ChunkTokenText(const v1::GenerateResponse& chunk, int i) {
  if (chunk.token_ids_size() == 1) return chunk.text();
  if (i < chunk.logprobs_size()) {
    for (const v1::TokenLogprob& alt : chunk.logprobs(i).top()) {
      if (alt.token_id() == chunk.token_ids(i)) return alt.text();
    }
  }
  return "";
}

json CompletionUsage(const v1::GenerateUsage& usage) {
  return json{{"prompt_tokens", usage.prompt_tokens()},
              {"completion_tokens", usage.generated_tokens()},
              {"total_tokens", usage.prompt_tokens() + usage.generated_tokens()},
              // OpenAI's: the prompt tokens the prefix cache served.
              {"prompt_tokens_details", {{"cached_tokens", usage.cached_prompt_tokens()}}},
              {"peak_kv_cache_bytes", usage.peak_kv_cache_bytes()}};
}

json StopReason(const v1::GenerateResponse& chunk) {
  if (chunk.has_stop_string()) return chunk.stop_string();
  if (chunk.has_stop_token_id()) return chunk.stop_token_id();
  return json();
}

namespace {

// One choice from its stream chunks; its usage goes to *usage_out.
json CompletionChoice(const std::vector<v1::GenerateResponse>& chunks, int index, const CompletionFormat& format,
                      const v1::GenerateRequest* request, v1::GenerateUsage* usage_out);

}  // namespace

absl::StatusOr<EmbeddingsCall> ParseEmbeddingsRequest(absl::string_view body) {
  absl::StatusOr<json> parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.status();
  const json& root = *parsed;
  RETURN_IF_ERROR(CheckModel(root));
  EmbeddingsCall call;
  if (const json* format = Field(root, "encoding_format"); format != nullptr) {
    if (!format->is_string()) return TypeError("encoding_format", "\"float\" or \"base64\"", *format);
    const std::string f = format->get<std::string>();
    if (f != "float" && f != "base64") {
      return absl::InvalidArgumentError(
          absl::StrCat("encoding_format: '", SanitizeUtf8(f), "' is not one of \"float\", \"base64\""));
    }
    call.base64 = f == "base64";
  }
  RETURN_IF_ERROR(RefuseNonZeroPriority(root));
  const json* input = Field(root, "input");
  if (input == nullptr) return absl::InvalidArgumentError("input: required");
  RETURN_IF_ERROR(AddEncodeInputs(*input, "input", &call.request));
  RETURN_IF_ERROR(ReadEmbeddingDimensions(root, &call.request));
  return call;
}

json EmbeddingsResponse(const v1::EncodeResponse& response, const std::string& model, bool base64) {
  json data = json::array();
  for (int i = 0; i < response.results_size(); ++i) {
    const auto& values = response.results(i).embedding().values();
    json embedding;
    if (base64) {
      // OpenAI's base64 is the raw little-endian float32 array (x86 is little-endian).
      std::string bytes(values.size() * sizeof(float), '\0');
      if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());
      embedding = absl::Base64Escape(bytes);
    } else {
      embedding = json(std::vector<float>(values.begin(), values.end()));
    }
    data.push_back(json{{"object", "embedding"}, {"index", i}, {"embedding", std::move(embedding)}});
  }
  const int64_t tokens = response.usage().prompt_tokens();
  return json{{"object", "list"},
              {"data", std::move(data)},
              {"model", model},
              {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}}};
}

absl::Status CheckOpenAiModelField(const json& body) { return CheckModel(body); }

namespace {

// A schema's text with its properties in the order the client wrote them
// (nlohmann::json, which `root` is, sorts object keys): the body parsed
// again as ordered_json, followed down `path`. A string value is taken as
// the schema's text itself (vLLM accepts guided_json either way).
std::string OrderedSchemaText(absl::string_view body, std::initializer_list<const char*> path) {
  nlohmann::ordered_json v = nlohmann::ordered_json::parse(body.begin(), body.end(), nullptr, false);
  for (const char* key : path) v = v.is_object() && v.contains(key) ? v[key] : nlohmann::ordered_json();
  return v.is_string() ? v.get<std::string>() : v.dump();
}

}  // namespace

namespace {

// vLLM's "request_id", held to what X-Request-Id may be (it reaches logs and
// headers).
absl::Status ParseRequestId(const json& root, std::string* out) {
  const json* id = Field(root, "request_id");
  if (id == nullptr) return absl::OkStatus();
  const std::optional<std::string> valid =
      id->is_string() ? ValidClientRequestId(id->get_ref<const std::string&>()) : std::nullopt;
  if (!valid) {
    return TypeError("request_id", absl::StrCat("a string of 1 to ", kMaxRequestIdBytes,
                                                " letters, digits and -_.:/+=@ (it goes into logs and headers)"),
                     *id);
  }
  *out = *valid;
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseSharedCompletionFields(const json& root, absl::string_view body, size_t prompts,
                                         CompletionCall* call, v1::GenerateRequest* shared) {
  // vLLM's constrained-decoding extensions: unconstrained output where a
  // client asked for JSON or a grammar would look like success, so each is
  // refused by name rather than ignored with the other unknown fields.
  for (const char* field : {"guided_grammar", "logits_processors"}) {
    if (Field(root, field) != nullptr) {
      return Unsupported(field, "no such constraint; only guided_choice, guided_json, guided_regex and JSON mode");
    }
  }
  // A regex for the whole output: guided_regex or structured_outputs.regex.
  const json* regex = Field(root, "guided_regex");
  const char* regex_field = "guided_regex";
  // A JSON schema: vLLM's guided_json or structured_outputs.json, OpenAI's
  // response_format (below).
  std::string schema;
  const char* schema_field = nullptr;
  if (const json* g = Field(root, "guided_json"); g != nullptr) {
    if (!g->is_object() && !g->is_string()) return TypeError("guided_json", "an object or a string", *g);
    schema = OrderedSchemaText(body, {"guided_json"});
    schema_field = "guided_json";
  }
  // vLLM's choice constraint: guided_choice, or structured_outputs.choice.
  const json* choice = Field(root, "guided_choice");
  const char* choice_field = "guided_choice";
  if (const json* so = Field(root, "structured_outputs"); so != nullptr) {
    if (!so->is_object()) return TypeError("structured_outputs", "an object", *so);
    for (const auto& [key, value] : so->items()) {
      if (key == "json" && schema_field == nullptr) {
        if (!value.is_object() && !value.is_string()) {
          return TypeError("structured_outputs.json", "an object or a string", value);
        }
        schema = OrderedSchemaText(body, {"structured_outputs", "json"});
        schema_field = "structured_outputs.json";
      } else if (key == "regex") {
        if (regex != nullptr) return absl::InvalidArgumentError("structured_outputs.regex: give guided_regex or it, not both");
        regex = &value;
        regex_field = "structured_outputs.regex";
      } else if (key != "choice") {
        return Unsupported(absl::StrCat("structured_outputs.", SanitizeUtf8(key)).c_str(),
                           "no such constraint; only choice, json and regex");
      }
    }
    if (choice != nullptr) {
      return absl::InvalidArgumentError("structured_outputs.choice: give guided_choice or it, not both");
    }
    choice = Field(*so, "choice");
    choice_field = "structured_outputs.choice";
  }
  if (choice != nullptr) {
    if (!choice->is_array()) return TypeError(choice_field, "an array of strings", *choice);
    v1::SamplingParams* sampling = shared->mutable_sampling();
    for (size_t i = 0; i < choice->size(); ++i) {
      if (!(*choice)[i].is_string()) {
        return TypeError(absl::StrCat(choice_field, "[", i, "]").c_str(), "a string", (*choice)[i]);
      }
      sampling->add_choice((*choice)[i].get<std::string>());
    }
    sampling->set_response_format(v1::RESPONSE_FORMAT_CHOICE);
  }
  if (const json* format = Field(root, "response_format"); format != nullptr) {
    const json* type = format->is_object() ? Field(*format, "type") : nullptr;
    const std::string name = type != nullptr && type->is_string() ? type->get<std::string>() : "";
    if (name == "json_object" || name == "json_schema") {
      if (shared->sampling().response_format() == v1::RESPONSE_FORMAT_CHOICE || schema_field != nullptr) {
        return absl::InvalidArgumentError(absl::StrCat("response_format: ", name, " and ",
                                                       schema_field != nullptr ? schema_field : choice_field,
                                                       " exclude each other"));
      }
    }
    if (name == "json_object") {
      shared->mutable_sampling()->set_response_format(v1::RESPONSE_FORMAT_JSON_OBJECT);
    } else if (name == "json_schema") {
      // OpenAI: {"type": "json_schema", "json_schema": {"name", "schema", "strict"}}.
      const json* js = Field(*format, "json_schema");
      if (js == nullptr || !js->is_object()) {
        return absl::InvalidArgumentError("response_format.json_schema: required, an object with a \"schema\"");
      }
      const json* inner = Field(*js, "schema");
      if (inner == nullptr || !inner->is_object()) {
        return absl::InvalidArgumentError("response_format.json_schema.schema: required, an object");
      }
      schema = OrderedSchemaText(body, {"response_format", "json_schema", "schema"});
      schema_field = "response_format.json_schema.schema";
    } else if (name != "text") {
      return Unsupported("response_format",
                         "only {\"type\": \"text\"}, {\"type\": \"json_object\"} and {\"type\": \"json_schema\"}");
    }
  }
  if (schema_field != nullptr) {
    if (shared->sampling().response_format() == v1::RESPONSE_FORMAT_CHOICE) {
      return absl::InvalidArgumentError(absl::StrCat(schema_field, ": a JSON schema and a choice exclude each other"));
    }
    shared->mutable_sampling()->set_response_format(v1::RESPONSE_FORMAT_JSON_SCHEMA);
    shared->mutable_sampling()->set_json_schema(schema);
  }
  if (regex != nullptr) {
    if (!regex->is_string()) return TypeError(regex_field, "a string (a regular expression)", *regex);
    if (shared->sampling().response_format() != v1::RESPONSE_FORMAT_TEXT) {
      return absl::InvalidArgumentError(
          absl::StrCat(regex_field, ": a regex and another constraint (a schema, a choice, JSON mode) exclude each "
                                    "other"));
    }
    shared->mutable_sampling()->set_response_format(v1::RESPONSE_FORMAT_REGEX);
    shared->mutable_sampling()->set_regex(regex->get<std::string>());
  }
  if (const json* n = Field(root, "n"); n != nullptr) {
    ASSIGN_OR_RETURN(call->n, Int32Field(*n, "n"));
    if (call->n < 1 || static_cast<size_t>(call->n) > kMaxCompletionChoices) {
      return absl::InvalidArgumentError(
          absl::StrCat("n: ", call->n, " is outside [1, ", kMaxCompletionChoices, "]"));
    }
    if (prompts * static_cast<size_t>(call->n) > kMaxCompletionChoices) {
      return absl::InvalidArgumentError(absl::StrCat("n: ", call->n, " choices for each of ", prompts,
                                                     " prompts make ", prompts * call->n,
                                                     " choices; at most ", kMaxCompletionChoices, " per request"));
    }
  }
  // best_of = n returns every sample drawn, which is what n alone does; more
  // samples than returned would need ranking by logprob, not implemented.
  if (const json* b = Field(root, "best_of"); b != nullptr) {
    ASSIGN_OR_RETURN(const int32_t best_of, Int32Field(*b, "best_of"));
    if (best_of != call->n) {
      return Unsupported("best_of", absl::StrCat("only best_of = n (", call->n, "), got ", best_of));
    }
  }
  v1::SamplingParams* sampling = shared->mutable_sampling();
  RETURN_IF_ERROR(Optional<int32_t>(root, "max_tokens", Int32Field,
                                                   [&](int32_t v) { sampling->set_max_new_tokens(v); }));
  RETURN_IF_ERROR(
      Optional<float>(root, "temperature", FloatField, [&](float v) { sampling->set_temperature(v); }));
  RETURN_IF_ERROR(Optional<float>(root, "top_p", FloatField, [&](float v) { sampling->set_top_p(v); }));
  RETURN_IF_ERROR(Optional<int32_t>(root, "top_k", Int32Field, [&](int32_t v) { sampling->set_top_k(v); }));
  RETURN_IF_ERROR(Optional<float>(root, "min_p", FloatField, [&](float v) { sampling->set_min_p(v); }));
  RETURN_IF_ERROR(
      Optional<int32_t>(root, "min_tokens", Int32Field, [&](int32_t v) { sampling->set_min_tokens(v); }));
  RETURN_IF_ERROR(Optional<float>(root, "repetition_penalty", FloatField,
                                                 [&](float v) { sampling->set_repetition_penalty(v); }));
  RETURN_IF_ERROR(Optional<float>(root, "frequency_penalty", FloatField,
                                  [&](float v) { sampling->set_frequency_penalty(v); }));
  RETURN_IF_ERROR(Optional<float>(root, "presence_penalty", FloatField,
                                  [&](float v) { sampling->set_presence_penalty(v); }));
  RETURN_IF_ERROR(ParseLogitBias(root, sampling));
  // vLLM's allowed_token_ids; their range is checked against the model.
  if (const json* ids = Field(root, "allowed_token_ids"); ids != nullptr) {
    if (!ids->is_array()) return TypeError("allowed_token_ids", "an array of token ids", *ids);
    if (ids->empty()) return absl::InvalidArgumentError("allowed_token_ids: empty (no token could be generated)");
    for (size_t i = 0; i < ids->size(); ++i) {
      ASSIGN_OR_RETURN(const int32_t id, Int32Field((*ids)[i], absl::StrCat("allowed_token_ids[", i, "]")));
      sampling->add_allowed_token_ids(id);
    }
  }
  // vLLM's bad_words: their count and lengths are checked with the rest.
  if (const json* words = Field(root, "bad_words"); words != nullptr) {
    if (!words->is_array()) return TypeError("bad_words", "an array of strings", *words);
    for (size_t i = 0; i < words->size(); ++i) {
      if (!(*words)[i].is_string()) return TypeError(absl::StrCat("bad_words[", i, "]"), "a string", (*words)[i]);
      sampling->add_bad_words((*words)[i].get<std::string>());
    }
  }
  // vLLM's cache_salt: a non-empty string when given, as vLLM checks it.
  if (const json* salt = Field(root, "cache_salt"); salt != nullptr) {
    if (!salt->is_string() || salt->get_ref<const std::string&>().empty()) {
      return TypeError("cache_salt", "a non-empty string", *salt);
    }
    sampling->set_cache_salt(salt->get<std::string>());
  }
  RETURN_IF_ERROR(Optional<bool>(root, "return_token_ids", BoolField, [&](bool v) {
    call->format.return_token_ids = v;
    shared->set_return_prompt_token_ids(v);
  }));
  RETURN_IF_ERROR(Optional<bool>(root, "return_tokens_as_token_ids", BoolField,
                                 [&](bool v) { call->format.tokens_as_ids = v; }));
  RETURN_IF_ERROR(Optional<bool>(root, "skip_special_tokens", BoolField,
                                 [&](bool v) { sampling->set_skip_special_tokens(v); }));
  RETURN_IF_ERROR(RefuseNonZeroPriority(root));
  RETURN_IF_ERROR(ParseRequestId(root, &call->request_id));
  // Sampling where beam search was asked for would look like its answer.
  if (const json* beam = Field(root, "use_beam_search"); beam != nullptr) {
    ASSIGN_OR_RETURN(const bool use_beam_search, BoolField(*beam, "use_beam_search"));
    if (use_beam_search) return Unsupported("use_beam_search", "beam search is not implemented");
  }
  RETURN_IF_ERROR(
      Optional<bool>(root, "ignore_eos", BoolField, [&](bool v) { sampling->set_ignore_eos(v); }));
  RETURN_IF_ERROR(Optional<bool>(root, "include_stop_str_in_output", BoolField,
                                 [&](bool v) { sampling->set_include_stop_str_in_output(v); }));
  RETURN_IF_ERROR(Optional<bool>(root, "stream", BoolField, [&](bool v) { call->stream = v; }));
  RETURN_IF_ERROR(ParseStreamOptions(root, call));
  RETURN_IF_ERROR(ParseStop(root, sampling));
  if (const json* seed = Field(root, "seed"); seed != nullptr) {
    if (!seed->is_number_integer()) return TypeError("seed", "an integer", *seed);
    if (!seed->is_number_unsigned()) return absl::InvalidArgumentError("seed: must be a non-negative integer");
    sampling->set_seed(seed->get<uint64_t>());
  }
  if (const json* ids = Field(root, "stop_token_ids"); ids != nullptr) {
    if (!ids->is_array()) return TypeError("stop_token_ids", "an array of token ids", *ids);
    absl::StatusOr<v1::TokenIds> parsed_ids = TokenIdsField(*ids, "stop_token_ids");
    if (!parsed_ids.ok()) return parsed_ids.status();
    sampling->mutable_stop_token_ids()->Add(parsed_ids->ids().begin(), parsed_ids->ids().end());
  }
  return Optional<int32_t>(root, "truncate_prompt_tokens", Int32Field,
                           [&](int32_t v) { shared->set_truncate_prompt_tokens(v); });
}

void ExpandCompletionChoices(const std::vector<v1::GenerateRequest>& prompts, const v1::GenerateRequest& shared,
                             CompletionCall* call) {
  const v1::SamplingParams& sampling = shared.sampling();
  for (const v1::GenerateRequest& prompt : prompts) {
    for (int j = 0; j < call->n; ++j) {
      v1::GenerateRequest& choice = call->requests.emplace_back(prompt);
      *choice.mutable_sampling() = sampling;
      if (shared.has_truncate_prompt_tokens()) choice.set_truncate_prompt_tokens(shared.truncate_prompt_tokens());
      choice.set_return_prompt_token_ids(shared.return_prompt_token_ids());
      // uint64 arithmetic: a seed near the top wraps, still distinct.
      if (sampling.has_seed()) choice.mutable_sampling()->set_seed(sampling.seed() + static_cast<uint64_t>(j));
    }
  }
}

absl::StatusOr<CompletionCall> ParseCompletionRequest(absl::string_view body) {
  absl::StatusOr<json> parsed = ParseJsonObject(body);
  if (!parsed.ok()) return parsed.status();
  const json& root = *parsed;
  RETURN_IF_ERROR(CheckModel(root));
  RETURN_IF_ERROR(RefuseNonDefaults(root));
  CompletionCall call;
  ASSIGN_OR_RETURN(std::vector<v1::GenerateRequest> prompts, ParsePrompts(root));
  v1::GenerateRequest request;  // the sampling every choice shares
  v1::SamplingParams* sampling = request.mutable_sampling();
  sampling->set_max_new_tokens(kOpenAiDefaultMaxTokens);
  RETURN_IF_ERROR(ParseSharedCompletionFields(root, body, prompts.size(), &call, &request));
  if (const json* logprobs = Field(root, "logprobs"); logprobs != nullptr) {
    absl::StatusOr<int32_t> n = Int32Field(*logprobs, "logprobs");
    if (!n.ok()) return n.status();
    call.format.logprobs = true;
    sampling->set_logprobs(true);
    sampling->set_top_logprobs(*n);
  }
  RETURN_IF_ERROR(Optional<bool>(root, "echo", BoolField, [&](bool v) { call.format.echo = v; }));
  if (call.format.echo) {
    sampling->set_prompt_logprobs(true);
    if (sampling->max_new_tokens() == 0) {
      call.format.drop_generated = true;
      sampling->set_max_new_tokens(1);
    }
  }
  RETURN_IF_ERROR(ParsePromptLogprobs(root, &call, sampling));
  ExpandCompletionChoices(prompts, request, &call);
  return call;
}

absl::Status ParsePromptLogprobs(const json& root, CompletionCall* call, v1::SamplingParams* sampling) {
  const json* field = Field(root, "prompt_logprobs");
  if (field == nullptr) return absl::OkStatus();
  ASSIGN_OR_RETURN(const int32_t k, Int32Field(*field, "prompt_logprobs"));
  if (k < 0 || k > kOpenAiMaxTopLogprobs) {
    return absl::InvalidArgumentError(absl::StrCat("prompt_logprobs: ", k, " is outside [0, ", kOpenAiMaxTopLogprobs,
                                                   "] (vLLM's -1, the whole vocabulary, is not offered)"));
  }
  // As vLLM: a stream carries no prompt logprobs, so it refuses to be asked
  // for alternatives.
  if (call->stream) {
    if (k > 0) return absl::InvalidArgumentError("prompt_logprobs: not available with \"stream\": true");
    return absl::OkStatus();
  }
  call->format.prompt_logprobs = k;
  sampling->set_prompt_logprobs(true);
  // echo's logprobs show top_logprobs alternatives of the same scores.
  sampling->set_prompt_top_logprobs(std::max(k, sampling->logprobs() ? sampling->top_logprobs() : 0));
  return absl::OkStatus();
}

json VllmPromptLogprobs(const v1::GenerateResponse& first, int k) {
  json out = json::array();
  for (const v1::PromptToken& t : first.prompt_tokens()) {
    if (!t.has_logprobs()) {  // the first token: nothing before it
      out.push_back(nullptr);
      continue;
    }
    json position = json::object();
    position[std::to_string(t.token_id())] = {
        {"logprob", t.logprobs().logprob()}, {"rank", t.logprobs().rank()}, {"decoded_token", SanitizeUtf8(t.text())}};
    for (int a = 0; a < std::min(k, t.logprobs().top_size()); ++a) {
      const v1::TokenLogprob& alt = t.logprobs().top(a);
      const std::string key = std::to_string(alt.token_id());
      if (position.contains(key)) continue;  // the prompt token among the best: once
      position[key] = {{"logprob", alt.logprob()}, {"rank", a + 1}, {"decoded_token", SanitizeUtf8(alt.text())}};
    }
    out.push_back(std::move(position));
  }
  return out;
}

const char* OpenAiFinishReason(v1::FinishReason reason) {
  switch (reason) {
    case v1::FINISH_REASON_LENGTH:
    case v1::FINISH_REASON_CONTEXT_LENGTH: return "length";
    case v1::FINISH_REASON_EOS:
    case v1::FINISH_REASON_STOP_STRING:
    case v1::FINISH_REASON_STOP_TOKEN: return "stop";
    default: return "stop";
  }
}

void AddCompletionUsage(const v1::GenerateUsage& usage, v1::GenerateUsage* total) {
  total->set_prompt_tokens(total->prompt_tokens() + usage.prompt_tokens());
  total->set_generated_tokens(total->generated_tokens() + usage.generated_tokens());
  total->set_peak_kv_cache_bytes(total->peak_kv_cache_bytes() + usage.peak_kv_cache_bytes());
  total->set_cached_prompt_tokens(total->cached_prompt_tokens() + usage.cached_prompt_tokens());
}

json CompletionResponse(const std::vector<std::vector<v1::GenerateResponse>>& per_choice, const CompletionIdentity& id,
                        const CompletionFormat& format, const std::vector<v1::GenerateRequest>& requests) {
  json choices = json::array();
  v1::GenerateUsage total;
  for (size_t index = 0; index < per_choice.size(); ++index) {
    v1::GenerateUsage usage;
    const v1::GenerateRequest* request = index < requests.size() ? &requests[index] : nullptr;
    choices.push_back(CompletionChoice(per_choice[index], static_cast<int>(index), format, request, &usage));
    AddCompletionUsage(usage, &total);
  }
  return json{{"id", id.id},
              {"object", "text_completion"},
              {"created", id.created},
              {"model", id.model},
              {"choices", std::move(choices)},
              {"usage", CompletionUsage(total)}};
}

namespace {

json CompletionChoice(const std::vector<v1::GenerateResponse>& chunks, int index, const CompletionFormat& format,
                      const v1::GenerateRequest* request, v1::GenerateUsage* usage_out) {
  std::string text;
  json all_logprobs = EmptyLogprobs();
  v1::FinishReason finish = v1::FINISH_REASON_UNSPECIFIED;
  json stop_reason;
  v1::GenerateUsage usage;
  for (const v1::GenerateResponse& chunk : chunks) {
    ChunkPart part = Render(chunk, format, request, static_cast<int64_t>(text.size()));
    if (format.logprobs) AppendLogprobs(part.logprobs, &all_logprobs);
    text += part.text;
    if (chunk.finish_reason() != v1::FINISH_REASON_UNSPECIFIED) {
      finish = chunk.finish_reason();
      stop_reason = StopReason(chunk);
    }
    if (chunk.has_usage()) usage = chunk.usage();
  }
  *usage_out = usage;
  json choice{{"index", index},
              {"text", SanitizeUtf8(text)},
              {"logprobs", format.logprobs ? all_logprobs : json()},
              {"finish_reason", OpenAiFinishReason(finish)},
              {"stop_reason", std::move(stop_reason)}};
  if (format.prompt_logprobs >= 0 && !chunks.empty()) {
    choice["prompt_logprobs"] = VllmPromptLogprobs(chunks[0], format.prompt_logprobs);
  }
  AddTokenIds(format, chunks, &choice);
  if (format.return_token_ids) choice["prompt_token_ids"] = chunks.empty() ? json::array() : PromptTokenIds(chunks[0]);
  return choice;
}

}  // namespace

json CompletionChunk(const v1::GenerateResponse& chunk, const CompletionIdentity& id, const CompletionFormat& format,
                     int64_t text_offset, int index, ChunkUsage usage, const v1::GenerateRequest* request) {
  const bool last = chunk.finish_reason() != v1::FINISH_REASON_UNSPECIFIED;
  ChunkPart part = Render(chunk, format, request, text_offset);
  json choice{{"index", index},
              {"text", SanitizeUtf8(part.text)},
              {"logprobs", std::move(part.logprobs)},
              {"finish_reason", last ? json(OpenAiFinishReason(chunk.finish_reason())) : json()},
              {"stop_reason", StopReason(chunk)}};
  if (format.return_token_ids) {
    // As vLLM: the prompt's ids on the choice's first chunk only.
    if (chunk.prompt_token_ids_size() > 0) choice["prompt_token_ids"] = PromptTokenIds(chunk);
    choice["token_ids"] = std::vector<int32_t>(chunk.token_ids().begin(), chunk.token_ids().end());
  }
  json out{{"id", id.id},
           {"object", "text_completion"},
           {"created", id.created},
           {"model", id.model},
           {"choices", json::array({std::move(choice)})}};
  if (usage == ChunkUsage::kNull) out["usage"] = json();
  if (usage == ChunkUsage::kOnLast && last && chunk.has_usage()) out["usage"] = CompletionUsage(chunk.usage());
  return out;
}

void DropGenerated(const CompletionFormat& format, v1::GenerateResponse* chunk) {
  if (!format.drop_generated) return;
  chunk->clear_token_ids();
  chunk->clear_text();
  chunk->clear_logprobs();
  if (chunk->has_usage()) chunk->mutable_usage()->set_generated_tokens(0);
}

json CompletionUsageChunk(const v1::GenerateUsage& total, const CompletionIdentity& id, const char* object) {
  return json{{"id", id.id},
              {"object", object},
              {"created", id.created},
              {"model", id.model},
              {"choices", json::array()},
              {"usage", CompletionUsage(total)}};
}

json ModelsResponse(const std::vector<ServedModel>& models, int64_t created) {
  json data = json::array();
  for (const ServedModel& m : models) {
    if (m.name.empty()) continue;
    json entry{{"id", m.name}, {"object", "model"}, {"created", created}, {"owned_by", "attnserve"}};
    if (m.max_model_len > 0) entry["max_model_len"] = m.max_model_len;
    data.push_back(std::move(entry));
  }
  return json{{"object", "list"}, {"data", std::move(data)}};
}

absl::Status WithOpenAiFieldNames(const absl::Status& status) {
  if (status.code() != absl::StatusCode::kInvalidArgument) return status;
  static constexpr std::pair<const char*, const char*> kNames[] = {
      {"max_new_tokens", "max_tokens"}, {"top_logprobs", "logprobs"}, {"token_ids", "prompt/input"},
      {"inputs", "input"}};
  const absl::string_view message = status.message();
  for (const auto& [proto_name, openai_name] : kNames) {
    if (message.find(proto_name) != absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(message, " (OpenAI field '", openai_name, "')"));
    }
  }
  return status;
}

}  // namespace attnserve
