#include "server/http/score_api.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "server/http/hf_api.h"
#include "server/http/json_body.h"
#include "server/http/json_fields.h"
#include "server/http/openai_api.h"

namespace attnserve {
namespace {

using nlohmann::json;

// Adds one text named `field` to the call's Encode request.
void AddText(std::string text, std::string field, ScoreCall* call) {
  call->request.add_inputs()->set_text(std::move(text));
  call->fields.push_back(std::move(field));
}

// A string or an array of strings (at least one), each added under
// "<name>" or "<name>[i]"; returns how many.
absl::StatusOr<int> AddTexts(const json& value, const std::string& name, ScoreCall* call) {
  if (value.is_string()) {
    AddText(value.get<std::string>(), name, call);
    return 1;
  }
  if (!value.is_array()) return TypeError(name, "a string or an array of strings", value);
  if (value.empty()) return absl::InvalidArgumentError(absl::StrCat(name, ": must not be empty"));
  for (size_t i = 0; i < value.size(); ++i) {
    const std::string field = absl::StrCat(name, "[", i, "]");
    if (!value[i].is_string()) return TypeError(field, "a string", value[i]);
    AddText(value[i].get<std::string>(), field, call);
  }
  return static_cast<int>(value.size());
}

// vLLM's truncate_prompt_tokens: -1 (cut at the model's length) is what
// the encoder does by default; a count of its own is not offered.
absl::Status CheckTruncatePromptTokens(const json& root) {
  const json* value = Field(root, "truncate_prompt_tokens");
  if (value == nullptr) return absl::OkStatus();
  if (!value->is_number_integer()) return TypeError("truncate_prompt_tokens", "an integer", *value);
  if (value->get<int64_t>() != -1) {
    return Unsupported("truncate_prompt_tokens",
                       "only -1: inputs are cut at the encoder's length, as they are without it");
  }
  return absl::OkStatus();
}

// A rerank body's "query": the one left text.
absl::Status AddQuery(const json& root, ScoreCall* call) {
  const json* query = Field(root, "query");
  if (query == nullptr) return absl::InvalidArgumentError("query: required");
  if (!query->is_string()) return TypeError("query", "a string", *query);
  AddText(query->get<std::string>(), "query", call);
  call->left = 1;
  return absl::OkStatus();
}

double Cosine(const float* a, const float* b, int64_t n) {
  double dot = 0, aa = 0, bb = 0;
  for (int64_t i = 0; i < n; ++i) {
    dot += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  // torch.nn.CosineSimilarity's eps (1e-8) on each norm: a zero vector
  // scores 0 rather than NaN.
  constexpr double kEps = 1e-8;
  return dot / (std::max(std::sqrt(aa), kEps) * std::max(std::sqrt(bb), kEps));
}

}  // namespace

std::vector<size_t> BestFirst(const std::vector<double>& scores) {
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  return order;
}

// A priority other than 0 is refused, as vLLM does without priority
// scheduling.
absl::Status CheckVllmOptions(const json& root) {
  RETURN_IF_ERROR(CheckOpenAiModelField(root));
  RETURN_IF_ERROR(CheckTruncatePromptTokens(root));
  return RefuseNonZeroPriority(root);
}

absl::StatusOr<ScoreCall> ParseScoreRequest(absl::string_view body) {
  ASSIGN_OR_RETURN(const json root, ParseJsonObject(body));
  RETURN_IF_ERROR(CheckVllmOptions(root));
  const json* text_1 = Field(root, "text_1");
  if (text_1 == nullptr) return absl::InvalidArgumentError("text_1: required");
  const json* text_2 = Field(root, "text_2");
  if (text_2 == nullptr) return absl::InvalidArgumentError("text_2: required");
  ScoreCall call;
  ASSIGN_OR_RETURN(call.left, AddTexts(*text_1, "text_1", &call));
  ASSIGN_OR_RETURN(const int right, AddTexts(*text_2, "text_2", &call));
  if (call.left > 1 && call.left != right) {
    return absl::InvalidArgumentError(absl::StrCat("text_1: ", call.left, " texts against ", right,
                                                   " in text_2; the pairs must be 1:1, 1:N or N:N"));
  }
  return call;
}

absl::StatusOr<ScoreCall> ParseRerankRequest(absl::string_view body) {
  ASSIGN_OR_RETURN(const json root, ParseJsonObject(body));
  return ParseRerankJson(root);
}

absl::StatusOr<ScoreCall> ParseRerankJson(const json& root) {
  RETURN_IF_ERROR(CheckVllmOptions(root));
  ScoreCall call;
  RETURN_IF_ERROR(AddQuery(root, &call));
  const json* documents = Field(root, "documents");
  if (documents == nullptr) return absl::InvalidArgumentError("documents: required (or TEI's \"texts\")");
  if (!documents->is_array()) return TypeError("documents", "an array of strings", *documents);
  if (documents->empty()) return absl::InvalidArgumentError("documents: must not be empty");
  for (size_t i = 0; i < documents->size(); ++i) {
    const json& d = (*documents)[i];
    const std::string field = absl::StrCat("documents[", i, "]");
    // Jina's and Cohere's older form {"text": ...} beside plain strings.
    const json* text = d.is_object() ? Field(d, "text") : &d;
    if (text == nullptr || !text->is_string()) return TypeError(field, "a string or {\"text\": string}", d);
    call.documents.push_back(text->get<std::string>());
    AddText(text->get<std::string>(), field, &call);
  }
  if (const json* top_n = Field(root, "top_n"); top_n != nullptr) {
    ASSIGN_OR_RETURN(call.top_n, Int32Field(*top_n, "top_n"));
    if (call.top_n < 0) return absl::InvalidArgumentError(absl::StrCat("top_n = ", call.top_n, ": must be >= 0 (0: all)"));
  }
  RETURN_IF_ERROR(Optional<bool>(root, "return_documents", BoolField, [&](bool v) { call.return_documents = v; }));
  return call;
}

bool IsTeiRerank(const json& root) { return Field(root, "texts") != nullptr && Field(root, "documents") == nullptr; }

absl::StatusOr<ScoreCall> ParseTeiRerankJson(const json& root) {
  ScoreCall call;
  RETURN_IF_ERROR(AddQuery(root, &call));
  const json* texts = Field(root, "texts");
  if (texts == nullptr) return absl::InvalidArgumentError("texts: required");
  if (!texts->is_array()) return TypeError("texts", "an array of strings", *texts);
  RETURN_IF_ERROR(AddTexts(*texts, "texts", &call).status());
  for (const json& text : *texts) call.documents.push_back(text.get<std::string>());
  RETURN_IF_ERROR(ReadTeiTruncation(root, &call.request));  // TEI's default: refuse over-long pairs
  call.return_documents = false;
  RETURN_IF_ERROR(Optional<bool>(root, "return_text", BoolField, [&](bool v) { call.return_documents = v; }));
  RETURN_IF_ERROR(Optional<bool>(root, "raw_scores", BoolField, [&](bool v) { call.raw_scores = v; }));
  return call;
}

absl::Status UseCrossEncoder(const std::vector<std::string>& labels, ScoreCall* call) {
  if (labels.empty() || call->cross) return absl::OkStatus();
  if (labels.size() != 1) {
    std::string names;
    for (size_t i = 0; i < labels.size() && i < 8; ++i) absl::StrAppend(&names, i == 0 ? "" : ", ", labels[i]);
    return absl::FailedPreconditionError(absl::StrCat(
        "the encoder is a classifier with ", labels.size(), " labels (", SanitizeUtf8(names),
        labels.size() > 8 ? ", ..." : "",
        "); scoring text pairs needs a cross-encoder with one label or an embedding model (POST /predict "
        "classifies with this one)"));
  }
  const v1::EncodeRequest texts = std::move(call->request);
  call->request = texts;
  call->request.clear_inputs();
  std::vector<std::string> fields;
  const int right = texts.inputs_size() - call->left;
  for (int j = 0; j < right; ++j) {
    v1::EncodeInput* pair = call->request.add_inputs();
    pair->set_text(texts.inputs(call->left == 1 ? 0 : j).text());
    pair->set_text_pair(texts.inputs(call->left + j).text());
    fields.push_back(call->fields[call->left + j]);
  }
  call->fields = std::move(fields);
  call->cross = true;
  return absl::OkStatus();
}

absl::StatusOr<ScoreCall> ParseSimilarityRequest(absl::string_view body) {
  ASSIGN_OR_RETURN(const json root, ParseJsonObject(body));
  const json* inputs = Field(root, "inputs");
  if (inputs == nullptr) return absl::InvalidArgumentError("inputs: required");
  if (!inputs->is_object()) {
    return TypeError("inputs", "an object {\"source_sentence\": string, \"sentences\": [string]}", *inputs);
  }
  ScoreCall call;
  const json* source = Field(*inputs, "source_sentence");
  if (source == nullptr) return absl::InvalidArgumentError("inputs.source_sentence: required");
  if (!source->is_string()) return TypeError("inputs.source_sentence", "a string", *source);
  AddText(source->get<std::string>(), "inputs.source_sentence", &call);
  call.left = 1;
  const json* sentences = Field(*inputs, "sentences");
  if (sentences == nullptr) return absl::InvalidArgumentError("inputs.sentences: required");
  if (!sentences->is_array()) return TypeError("inputs.sentences", "an array of strings", *sentences);
  RETURN_IF_ERROR(AddTexts(*sentences, "inputs.sentences", &call).status());
  call.request.set_truncation(v1::TRUNCATION_NONE);  // TEI's default: refuse over-long inputs
  if (const json* parameters = Field(root, "parameters"); parameters != nullptr) {
    if (!parameters->is_object()) return TypeError("parameters", "an object", *parameters);
    absl::Status s = ReadTeiTruncation(*parameters, &call.request);
    if (!s.ok()) return absl::Status(s.code(), absl::StrCat("parameters.", s.message()));
  }
  return call;
}

absl::StatusOr<std::vector<double>> PairScores(const ScoreCall& call, const v1::EncodeResponse& response) {
  if (response.results_size() != call.request.inputs_size()) {
    return absl::InternalError(absl::StrCat("score: ", response.results_size(), " results for ",
                                            call.request.inputs_size(), " inputs"));
  }
  if (call.cross) {
    std::vector<double> scores;
    scores.reserve(call.right());
    for (const v1::EncodeResult& r : response.results()) {
      if (r.logits_size() != 1) return absl::InternalError("score: a cross-encoder pair without exactly one logit");
      const double logit = r.logits(0);
      scores.push_back(call.raw_scores ? logit : 1.0 / (1.0 + std::exp(-logit)));
    }
    return scores;
  }
  const int64_t width = response.results(0).embedding().values_size();
  for (const v1::EncodeResult& r : response.results()) {
    if (r.embedding().values_size() != width || width == 0) {
      return absl::InternalError("score: the embeddings are not of one size");
    }
  }
  std::vector<double> scores;
  scores.reserve(call.right());
  for (int j = 0; j < call.right(); ++j) {
    const int left = call.left == 1 ? 0 : j;
    scores.push_back(Cosine(response.results(left).embedding().values().data(),
                            response.results(call.left + j).embedding().values().data(), width));
  }
  return scores;
}

absl::Status WithScoreFieldNames(const absl::Status& status, const ScoreCall& call) {
  if (status.code() != absl::StatusCode::kInvalidArgument) return status;
  const std::string message(status.message());
  // The core's per-request input limit counts every text of the call.
  if (absl::StartsWith(message, "inputs:") && call.cross) {
    return absl::InvalidArgumentError(absl::StrCat("too many pairs: ", call.right(),
                                                   " to score, each one input to the cross-encoder;",
                                                   message.substr(message.find(';') + 1)));
  }
  if (absl::StartsWith(message, "inputs:")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "too many texts: ", call.request.inputs_size(), " to encode (", call.left, " + ", call.right(),
        "), each encoded once;", message.substr(message.find(';') + 1)));
  }
  // "inputs[<i>]" (the scheduler's) or "input <i>" (the engine's): name the
  // field input i came from.
  for (const auto& [open, close] : {std::pair<const char*, const char*>{"inputs[", "]"}, {"input ", ""}}) {
    const size_t at = message.find(open);
    if (at == std::string::npos) continue;
    const size_t digits = at + std::strlen(open);
    size_t end = digits;
    while (end < message.size() && absl::ascii_isdigit(message[end])) ++end;
    int index = -1;
    if (!absl::SimpleAtoi(absl::string_view(message).substr(digits, end - digits), &index) || index < 0 ||
        index >= static_cast<int>(call.fields.size()) || message.compare(end, std::strlen(close), close) != 0) {
      continue;
    }
    return absl::InvalidArgumentError(
        absl::StrCat(message.substr(0, at), call.fields[index], message.substr(end + std::strlen(close))));
  }
  return status;
}

json ScoreResponse(const std::vector<double>& scores, int64_t tokens, const std::string& id, const std::string& model,
                   int64_t created) {
  json data = json::array();
  for (size_t i = 0; i < scores.size(); ++i) {
    data.push_back(json{{"index", i}, {"object", "score"}, {"score", scores[i]}});
  }
  return VllmPoolingList(std::move(data), tokens, id, model, created);
}

json VllmPoolingList(json data, int64_t tokens, const std::string& id, const std::string& model, int64_t created) {
  return json{{"id", id},
              {"object", "list"},
              {"created", created},
              {"model", model},
              {"data", std::move(data)},
              {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}, {"completion_tokens", 0}}}};
}

json RerankResponse(const ScoreCall& call, const std::vector<double>& scores, int64_t tokens, const std::string& id,
                    const std::string& model) {
  std::vector<size_t> order = BestFirst(scores);
  if (call.top_n > 0 && static_cast<size_t>(call.top_n) < order.size()) order.resize(call.top_n);
  json results = json::array();
  for (size_t i : order) {
    json result{{"index", i}, {"relevance_score", scores[i]}};
    if (call.return_documents) result["document"] = json{{"text", call.documents[i]}};
    results.push_back(std::move(result));
  }
  return json{{"id", id},
              {"model", model},
              {"usage", {{"prompt_tokens", tokens}, {"total_tokens", tokens}}},
              {"results", std::move(results)}};
}

json TeiRerankResponse(const ScoreCall& call, const std::vector<double>& scores) {
  json out = json::array();
  for (size_t i : BestFirst(scores)) {
    json rank{{"index", i}, {"score", static_cast<float>(scores[i])}};
    if (call.return_documents) rank["text"] = call.documents[i];
    out.push_back(std::move(rank));
  }
  return out;
}

json SimilarityResponse(const std::vector<double>& scores) {
  json out = json::array();
  for (double s : scores) out.push_back(static_cast<float>(s));
  return out;
}

}  // namespace attnserve
