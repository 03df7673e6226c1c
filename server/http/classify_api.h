// Classifying texts and text pairs with an encoder that has a
// classification head (a BERT cross-encoder / reranker or classifier; the
// Encode RPC's logits): TEI's /predict and vLLM's /classify, each one Encode
// call.
//
//   TEI's /predict    {"inputs": "text" | ["text", "pair"] |
//                      [["text"], ["text", "pair"], ...], "truncate",
//                      "raw_scores"}: [{"score", "label"}] per input, best
//                      first (a list of them for a batch)
//   vLLM's /classify  {"input": "text" | ["text", ...], "model"}: per input
//                      {"index", "label", "probs", "num_classes"}
//
// Scores are probabilities unless raw_scores: the sigmoid of a single
// logit, the softmax of several (as TEI and vLLM).
#ifndef ATTNSERVE_SERVER_HTTP_CLASSIFY_API_H_
#define ATTNSERVE_SERVER_HTTP_CLASSIFY_API_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "attnserve/v1/inference.pb.h"
#include "nlohmann/json.hpp"

namespace attnserve {

struct ClassifyCall {
  v1::EncodeRequest request;
  bool batch = false;       // TEI: the body held a batch, so the answer is a list per input
  bool raw_scores = false;  // TEI: the logits themselves
};

absl::StatusOr<ClassifyCall> ParsePredictRequest(absl::string_view body);
absl::StatusOr<ClassifyCall> ParseClassifyRequest(absl::string_view body);

// FAILED_PRECONDITION naming `route` when the encoder has no classification
// head (`labels` empty: an embedding model).
absl::Status RequireClassifier(const std::vector<std::string>& labels, absl::string_view route);

// FAILED_PRECONDITION naming `route` when the encoder has a classification
// head: a cross-encoder's pooled states are not sentence embeddings, so the
// embedding routes refuse it (as TEI does) rather than answer vectors that
// look right and mean nothing. /v1/encode still answers them beside the
// logits.
absl::Status RequireEmbeddingModel(const std::vector<std::string>& labels, absl::string_view route);

// FAILED_PRECONDITION naming `route`: a SPLADE model (`sparse`) answers
// sparse vectors only on /embed_sparse (and gRPC Encode), so the dense
// embedding and similarity routes refuse it, as TEI does.
absl::Status RequireDenseModel(bool sparse, absl::string_view route);

// The other way round: /embed_sparse needs a SPLADE model.
absl::Status RequireSparseModel(bool sparse, absl::string_view route);

// Probabilities of the labels from their logits.
std::vector<double> LabelProbabilities(const google::protobuf::RepeatedField<float>& logits);

// The answers. INTERNAL when a result does not carry one logit per label.
absl::StatusOr<nlohmann::json> PredictResponse(const ClassifyCall& call, const v1::EncodeResponse& response,
                                               const std::vector<std::string>& labels);
absl::StatusOr<nlohmann::json> ClassifyResponse(const v1::EncodeResponse& response,
                                                const std::vector<std::string>& labels, const std::string& id,
                                                const std::string& model, int64_t created);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_CLASSIFY_API_H_
