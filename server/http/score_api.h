// Scoring text pairs with the encoder: the cosine similarity of their pooled
// embeddings, as vLLM scores with an embedding (bi-encoder) model and as
// TEI's /similarity does. Three request shapes become one Encode call:
//
//   vLLM's /score     {"text_1": str | [str], "text_2": str | [str]}: pairs
//                     1:1, 1:N (text_1 against each text_2) or N:N (i with i)
//   vLLM's /rerank    {"query", "documents", "top_n", "return_documents"}
//                     (Jina's and Cohere's shape): the documents by score
//   TEI's /similarity {"inputs": {"source_sentence", "sentences"},
//                     "parameters": {...}} (the Hugging Face
//                     sentence-similarity task): one score per sentence
//
// A left text is encoded once, however many texts it is scored against, and
// every text of a call goes in the same Encode request, so the scheduler
// batches them and --encode-max-inputs-per-request bounds them together.
//
// With a cross-encoder (an encoder with a one-label classification head,
// such as a BERT reranker) every pair is instead one input read as a pair
// (UseCrossEncoder), and its score is the sigmoid of its logit, as
// sentence-transformers' CrossEncoder, TEI and vLLM score it (the logit
// itself with TEI's raw_scores). TEI's own /rerank shape {"query", "texts",
// "raw_scores", "return_text", "truncate"} is read too (ParseTeiRerankJson).
#ifndef ATTNSERVE_SERVER_HTTP_SCORE_API_H_
#define ATTNSERVE_SERVER_HTTP_SCORE_API_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "attnserve/v1/inference.pb.h"
#include "nlohmann/json.hpp"

namespace attnserve {

struct ScoreCall {
  // The left texts, then the right texts.
  v1::EncodeRequest request;
  // The client's name for each input of `request` ("text_2[3]",
  // "documents[0]"), so an Encode failure names what the client sent.
  std::vector<std::string> fields;
  // Left texts: 1 (scored against every right text) or one per right text.
  int left = 0;
  // /rerank: the documents' texts (echoed in the results), how many results
  // to return (0: all) and whether to echo the documents.
  std::vector<std::string> documents;
  int top_n = 0;
  bool return_documents = true;
  // Scored by a cross-encoder: request holds one input per pair (text and
  // text_pair), and `fields` names each pair by its right text.
  bool cross = false;
  // TEI's raw_scores: a cross-encoder's logit rather than its sigmoid.
  bool raw_scores = false;

  int right() const { return cross ? request.inputs_size() : request.inputs_size() - left; }
};

// What a vLLM pooling body may carry beside its texts: "model" (any string;
// the loaded encoder answers), truncate_prompt_tokens (-1 only) and a
// priority of 0.
absl::Status CheckVllmOptions(const nlohmann::json& root);

absl::StatusOr<ScoreCall> ParseScoreRequest(absl::string_view body);
absl::StatusOr<ScoreCall> ParseRerankRequest(absl::string_view body);
absl::StatusOr<ScoreCall> ParseRerankJson(const nlohmann::json& root);
absl::StatusOr<ScoreCall> ParseSimilarityRequest(absl::string_view body);
// TEI's /rerank body: "texts" rather than "documents" (IsTeiRerank). Over-long
// pairs are refused unless "truncate" is true, as TEI does; return_text
// (default false) echoes the texts.
bool IsTeiRerank(const nlohmann::json& root);
absl::StatusOr<ScoreCall> ParseTeiRerankJson(const nlohmann::json& root);

// Turns `call` into a cross-encoder's when the encoder has a classification
// head (`labels` not empty): one input per pair. FAILED_PRECONDITION when the
// head has more than one label (a classifier, not a reranker: /predict
// serves it). An embedding model (no labels) leaves the call as it is.
absl::Status UseCrossEncoder(const std::vector<std::string>& labels, ScoreCall* call);

// The score of each pair, in the right texts' order: the cosine similarity
// of the embeddings, or a cross-encoder's sigmoid(logit) (the logit with
// raw_scores). INTERNAL when the response does not hold one embedding per
// input of one size, or one logit per pair.
absl::StatusOr<std::vector<double>> PairScores(const ScoreCall& call, const v1::EncodeResponse& response);

// An Encode failure in the client's terms: "input i" becomes the field it
// came from, and the per-request input limit says it counts every text.
absl::Status WithScoreFieldNames(const absl::Status& status, const ScoreCall& call);

// vLLM's list envelope of a pooling answer (score, classify): {"id",
// "object": "list", "created", "model", "data", "usage"}.
nlohmann::json VllmPoolingList(nlohmann::json data, int64_t tokens, const std::string& id, const std::string& model,
                               int64_t created);
// vLLM's answers. `tokens` is the tokens encoded (each left text once).
nlohmann::json ScoreResponse(const std::vector<double>& scores, int64_t tokens, const std::string& id,
                             const std::string& model, int64_t created);
nlohmann::json RerankResponse(const ScoreCall& call, const std::vector<double>& scores, int64_t tokens,
                              const std::string& id, const std::string& model);
// TEI's: the scores as a JSON array of floats.
nlohmann::json SimilarityResponse(const std::vector<double>& scores);
// The indices of `scores`, best first; equal scores keep their order.
std::vector<size_t> BestFirst(const std::vector<double>& scores);

// TEI's /rerank answer: [{"index", "score", "text" with return_text}], best
// first.
nlohmann::json TeiRerankResponse(const ScoreCall& call, const std::vector<double>& scores);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_SCORE_API_H_
