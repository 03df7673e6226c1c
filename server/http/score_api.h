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

  int right() const { return request.inputs_size() - left; }
};

absl::StatusOr<ScoreCall> ParseScoreRequest(absl::string_view body);
absl::StatusOr<ScoreCall> ParseRerankRequest(absl::string_view body);
absl::StatusOr<ScoreCall> ParseSimilarityRequest(absl::string_view body);

// The cosine similarity of each pair, in the right texts' order. INTERNAL
// when the response does not hold one embedding per input of one size.
absl::StatusOr<std::vector<double>> PairScores(const ScoreCall& call, const v1::EncodeResponse& response);

// An Encode failure in the client's terms: "input i" becomes the field it
// came from, and the per-request input limit says it counts every text.
absl::Status WithScoreFieldNames(const absl::Status& status, const ScoreCall& call);

// vLLM's answers. `tokens` is the tokens encoded (each left text once).
nlohmann::json ScoreResponse(const std::vector<double>& scores, int64_t tokens, const std::string& id,
                             const std::string& model, int64_t created);
nlohmann::json RerankResponse(const ScoreCall& call, const std::vector<double>& scores, int64_t tokens,
                              const std::string& id, const std::string& model);
// TEI's: the scores as a JSON array of floats.
nlohmann::json SimilarityResponse(const std::vector<double>& scores);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_SCORE_API_H_
