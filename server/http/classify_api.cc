#include "server/http/classify_api.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "server/http/hf_api.h"
#include "server/http/json_body.h"
#include "server/http/json_fields.h"
#include "server/http/score_api.h"

namespace attnserve {
namespace {

using nlohmann::json;

// One TEI sequence: ["text"] or ["text", "pair"] (`field` names it).
absl::Status AddSequence(const json& value, const std::string& field, v1::EncodeRequest* request) {
  if (!value.is_array() || value.empty() || value.size() > 2) {
    return TypeError(field, "[string] or a pair [string, string]", value);
  }
  for (size_t k = 0; k < value.size(); ++k) {
    if (!value[k].is_string()) return TypeError(absl::StrCat(field, "[", k, "]"), "a string", value[k]);
  }
  v1::EncodeInput* input = request->add_inputs();
  input->set_text(value[0].get<std::string>());
  if (value.size() == 2) input->set_text_pair(value[1].get<std::string>());
  return absl::OkStatus();
}

// Results checked to hold one logit per label.
absl::Status CheckLogits(const v1::EncodeResponse& response, size_t labels) {
  for (const v1::EncodeResult& r : response.results()) {
    if (r.logits_size() != static_cast<int>(labels) || labels == 0) {
      return absl::InternalError(absl::StrCat("classify: ", r.logits_size(), " logits for ", labels, " labels"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<ClassifyCall> ParsePredictRequest(absl::string_view body) {
  ASSIGN_OR_RETURN(const json root, ParseJsonObject(body));
  const json* inputs = Field(root, "inputs");
  if (inputs == nullptr) return absl::InvalidArgumentError("inputs: required");
  ClassifyCall call;
  constexpr char kShapes[] = "a string, a pair [string, string] or a batch [[string] or [string, string], ...]";
  if (inputs->is_string()) {
    call.request.add_inputs()->set_text(inputs->get<std::string>());
  } else if (inputs->is_array() && !inputs->empty() && (*inputs)[0].is_string()) {
    RETURN_IF_ERROR(AddSequence(*inputs, "inputs", &call.request));
  } else if (inputs->is_array() && !inputs->empty()) {
    call.batch = true;
    for (size_t i = 0; i < inputs->size(); ++i) {
      RETURN_IF_ERROR(AddSequence((*inputs)[i], absl::StrCat("inputs[", i, "]"), &call.request));
    }
  } else {
    return TypeError("inputs", kShapes, *inputs);
  }
  RETURN_IF_ERROR(ReadTeiTruncation(root, &call.request));
  RETURN_IF_ERROR(Optional<bool>(root, "raw_scores", BoolField, [&](bool v) { call.raw_scores = v; }));
  return call;
}

absl::StatusOr<ClassifyCall> ParseClassifyRequest(absl::string_view body) {
  ASSIGN_OR_RETURN(const json root, ParseJsonObject(body));
  RETURN_IF_ERROR(CheckVllmOptions(root));
  const json* input = Field(root, "input");
  if (input == nullptr) return absl::InvalidArgumentError("input: required");
  ClassifyCall call;
  if (input->is_string()) {
    call.request.add_inputs()->set_text(input->get<std::string>());
    return call;
  }
  if (!input->is_array()) return TypeError("input", "a string or an array of strings", *input);
  if (input->empty()) return absl::InvalidArgumentError("input: must not be empty");
  for (size_t i = 0; i < input->size(); ++i) {
    if (!(*input)[i].is_string()) return TypeError(absl::StrCat("input[", i, "]"), "a string", (*input)[i]);
    call.request.add_inputs()->set_text((*input)[i].get<std::string>());
  }
  return call;
}

absl::Status RequireClassifier(const std::vector<std::string>& labels, absl::string_view route) {
  if (!labels.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      route, " needs an encoder with a classification head (a Hugging Face BertForSequenceClassification "
             "directory); the loaded encoder is an embedding model"));
}

absl::Status RequireEmbeddingModel(const std::vector<std::string>& labels, absl::string_view route) {
  if (labels.empty()) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      route, " answers sentence embeddings; the loaded encoder is a cross-encoder / classifier with ", labels.size(),
      labels.size() == 1 ? " label" : " labels",
      ", whose pooled states are not embeddings (POST /rerank, /v1/score or /predict use it)"));
}

absl::Status RequireDenseModel(bool sparse, absl::string_view route) {
  if (!sparse) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      route, " answers dense embeddings; the loaded encoder is a SPLADE model, whose embeddings are sparse "
             "(POST /embed_sparse, or gRPC Encode's sparse_embedding)"));
}

absl::Status RequireSparseModel(bool sparse, absl::string_view route) {
  if (sparse) return absl::OkStatus();
  return absl::FailedPreconditionError(absl::StrCat(
      route, " answers sparse embeddings and needs a SPLADE model (a masked-language model with a "
             "sentence-transformers SpladePooling module); the loaded encoder is a dense one (POST /embed)"));
}

std::vector<double> LabelProbabilities(const google::protobuf::RepeatedField<float>& logits) {
  std::vector<double> p(logits.begin(), logits.end());
  if (p.size() == 1) {
    p[0] = 1.0 / (1.0 + std::exp(-p[0]));
    return p;
  }
  const double top = *std::max_element(p.begin(), p.end());
  double sum = 0;
  for (double& v : p) sum += (v = std::exp(v - top));
  for (double& v : p) v /= sum;
  return p;
}

absl::StatusOr<json> PredictResponse(const ClassifyCall& call, const v1::EncodeResponse& response,
                                     const std::vector<std::string>& labels) {
  RETURN_IF_ERROR(CheckLogits(response, labels.size()));
  json all = json::array();
  for (const v1::EncodeResult& r : response.results()) {
    const std::vector<double> scores =
        call.raw_scores ? std::vector<double>(r.logits().begin(), r.logits().end()) : LabelProbabilities(r.logits());
    json predictions = json::array();
    for (size_t k : BestFirst(scores)) {
      predictions.push_back(json{{"score", static_cast<float>(scores[k])}, {"label", labels[k]}});
    }
    all.push_back(std::move(predictions));
  }
  if (!call.batch) return std::move(all[0]);
  return all;
}

absl::StatusOr<json> ClassifyResponse(const v1::EncodeResponse& response, const std::vector<std::string>& labels,
                                      const std::string& id, const std::string& model, int64_t created) {
  RETURN_IF_ERROR(CheckLogits(response, labels.size()));
  json data = json::array();
  for (int i = 0; i < response.results_size(); ++i) {
    const std::vector<double> probs = LabelProbabilities(response.results(i).logits());
    const size_t best = std::max_element(probs.begin(), probs.end()) - probs.begin();
    data.push_back(json{{"index", i},
                        {"label", labels[best]},
                        {"probs", probs},
                        {"num_classes", static_cast<int>(labels.size())}});
  }
  return VllmPoolingList(std::move(data), response.usage().prompt_tokens(), id, model, created);
}

}  // namespace attnserve
