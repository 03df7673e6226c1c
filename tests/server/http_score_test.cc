// Scoring's pure mapping (server/http/score_api.h): vLLM's /score and
// /rerank bodies and TEI's /similarity onto one Encode request, the pairs'
// cosines, and the answers. The routes run over a fake core in
// http_routes_test.cc; the real clients and sentence-transformers'
// similarities in tests/integration/test_http_score.py.
#include "server/http/score_api.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/encode_responses.h"

namespace attnserve {
namespace {

using ::nlohmann::json;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using testing_util::Embeddings;
using testing_util::Logits;

std::vector<std::string> Texts(const ScoreCall& call) {
  std::vector<std::string> out;
  for (const v1::EncodeInput& in : call.request.inputs()) out.push_back(in.text());
  return out;
}

void ExpectRefused(const absl::StatusOr<ScoreCall>& call, const std::string& expected, const std::string& body) {
  ASSERT_EQ(call.status().code(), absl::StatusCode::kInvalidArgument) << body;
  EXPECT_THAT(call.status().message(), HasSubstr(expected)) << body;
}

TEST(ScoreRequestTest, OneToOneOneToManyAndPairwise) {
  absl::StatusOr<ScoreCall> call = ParseScoreRequest(R"({"model": "m", "text_1": "q", "text_2": "d"})");
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_THAT(Texts(*call), ElementsAre("q", "d"));
  EXPECT_EQ(call->left, 1);
  EXPECT_EQ(call->right(), 1);
  // 1:N: the left text is encoded once.
  call = ParseScoreRequest(R"({"text_1": ["q"], "text_2": ["a", "b", "c"], "truncate_prompt_tokens": -1})");
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_THAT(Texts(*call), ElementsAre("q", "a", "b", "c"));
  EXPECT_EQ(call->left, 1);
  EXPECT_THAT(call->fields, ElementsAre("text_1[0]", "text_2[0]", "text_2[1]", "text_2[2]"));
  call = ParseScoreRequest(R"({"text_1": ["q1", "q2"], "text_2": ["a", "b"], "priority": 0})");
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->left, 2);
  EXPECT_EQ(call->request.truncation(), v1::TRUNCATION_UNSPECIFIED);  // cut at the model's length, as /v1/embeddings

  const std::pair<const char*, const char*> bad[] = {
      {R"({"text_2": "d"})", "text_1: required"},
      {R"({"text_1": "q"})", "text_2: required"},
      {R"({"text_1": [], "text_2": "d"})", "text_1: must not be empty"},
      {R"({"text_1": "q", "text_2": ["a", 3]})", "text_2[1]: must be a string"},
      {R"({"text_1": 1, "text_2": "d"})", "text_1: must be a string or an array of strings"},
      {R"({"text_1": ["a", "b"], "text_2": ["a", "b", "c"]})", "text_1: 2 texts against 3 in text_2"},
      {R"({"text_1": "q", "text_2": "d", "model": 5})", "model: must be a string"},
      {R"({"text_1": "q", "text_2": "d", "truncate_prompt_tokens": 16})", "truncate_prompt_tokens: not supported"},
      {R"({"text_1": "q", "text_2": "d", "priority": 3})", "priority: not supported"},
      {R"([1])", "JSON object"},
  };
  for (const auto& [body, expected] : bad) ExpectRefused(ParseScoreRequest(body), expected, body);
}

TEST(RerankRequestTest, QueryDocumentsTopNAndReturnDocuments) {
  absl::StatusOr<ScoreCall> call =
      ParseRerankRequest(R"({"query": "q", "documents": ["a", {"text": "b"}], "top_n": 1, "return_documents": false})");
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_THAT(Texts(*call), ElementsAre("q", "a", "b"));
  EXPECT_THAT(call->fields, ElementsAre("query", "documents[0]", "documents[1]"));
  EXPECT_THAT(call->documents, ElementsAre("a", "b"));
  EXPECT_EQ(call->top_n, 1);
  EXPECT_FALSE(call->return_documents);
  call = ParseRerankRequest(R"({"query": "q", "documents": ["a"]})");
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->top_n, 0);
  EXPECT_TRUE(call->return_documents);  // vLLM always returns them

  const std::pair<const char*, const char*> bad[] = {
      {R"({"documents": ["a"]})", "query: required"},
      {R"({"query": ["q"], "documents": ["a"]})", "query: must be a string"},
      {R"({"query": "q"})", "documents: required"},
      {R"({"query": "q", "texts": ["a"]})", "documents: required (or TEI's \"texts\")"},
      {R"({"query": "q", "documents": []})", "documents: must not be empty"},
      {R"({"query": "q", "documents": "a"})", "documents: must be an array of strings"},
      {R"({"query": "q", "documents": [{"txt": "a"}]})", "documents[0]: must be a string or {\"text\": string}"},
      {R"({"query": "q", "documents": ["a"], "top_n": -1})", "top_n = -1: must be >= 0"},
      {R"({"query": "q", "documents": ["a"], "top_n": 1.5})", "top_n"},
      {R"({"query": "q", "documents": ["a"], "return_documents": "yes"})", "return_documents: must be a boolean"},
  };
  for (const auto& [body, expected] : bad) ExpectRefused(ParseRerankRequest(body), expected, body);
}

TEST(SimilarityRequestTest, TeisShapeAndParameters) {
  absl::StatusOr<ScoreCall> call =
      ParseSimilarityRequest(R"({"inputs": {"source_sentence": "s", "sentences": ["a", "b"]}})");
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_THAT(Texts(*call), ElementsAre("s", "a", "b"));
  EXPECT_EQ(call->left, 1);
  EXPECT_EQ(call->request.truncation(), v1::TRUNCATION_NONE);  // TEI's default: over-long is refused
  call = ParseSimilarityRequest(
      R"({"inputs": {"source_sentence": "s", "sentences": ["a"]}, "parameters": {"truncate": true}})");
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->request.truncation(), v1::TRUNCATION_END);

  const std::pair<const char*, const char*> bad[] = {
      {R"({})", "inputs: required"},
      {R"({"inputs": "s"})", "inputs: must be an object"},
      {R"({"inputs": {"sentences": ["a"]}})", "inputs.source_sentence: required"},
      {R"({"inputs": {"source_sentence": "s"}})", "inputs.sentences: required"},
      {R"({"inputs": {"source_sentence": "s", "sentences": []}})", "inputs.sentences: must not be empty"},
      {R"({"inputs": {"source_sentence": "s", "sentences": "a"}})", "inputs.sentences: must be an array"},
      {R"({"inputs": {"source_sentence": "s", "sentences": ["a"]}, "parameters": {"prompt_name": 5}})",
       "parameters.prompt_name: must be a string"},
      {R"({"inputs": {"source_sentence": "s", "sentences": ["a"]}, "parameters": 1})", "parameters: must be an object"},
  };
  for (const auto& [body, expected] : bad) ExpectRefused(ParseSimilarityRequest(body), expected, body);
}

TEST(PairScoresTest, CosineOfEachPairAsTorchComputesIt) {
  absl::StatusOr<ScoreCall> one_to_many = ParseScoreRequest(R"({"text_1": "q", "text_2": ["a", "b", "c"]})");
  ASSERT_TRUE(one_to_many.ok());
  absl::StatusOr<std::vector<double>> scores =
      PairScores(*one_to_many, Embeddings({{1, 0}, {2, 0}, {0, 3}, {-1, -1}}));
  ASSERT_TRUE(scores.ok()) << scores.status();
  ASSERT_EQ(scores->size(), 3u);
  EXPECT_DOUBLE_EQ((*scores)[0], 1.0);
  EXPECT_DOUBLE_EQ((*scores)[1], 0.0);
  EXPECT_NEAR((*scores)[2], -1 / std::sqrt(2.0), 1e-15);

  absl::StatusOr<ScoreCall> pairwise = ParseScoreRequest(R"({"text_1": ["p", "q"], "text_2": ["a", "b"]})");
  ASSERT_TRUE(pairwise.ok());
  scores = PairScores(*pairwise, Embeddings({{1, 0}, {0, 1}, {1, 1}, {0, 2}}));
  ASSERT_TRUE(scores.ok()) << scores.status();
  EXPECT_NEAR((*scores)[0], 1 / std::sqrt(2.0), 1e-15);  // p with a
  EXPECT_DOUBLE_EQ((*scores)[1], 1.0);                    // q with b (p with b would be 0)
  // A zero vector scores 0, not NaN (torch's eps on each norm).
  scores = PairScores(*pairwise, Embeddings({{1, 0}, {0, 1}, {1, 1}, {0, 0}}));
  ASSERT_TRUE(scores.ok()) << scores.status();
  EXPECT_EQ((*scores)[1], 0.0);

  EXPECT_EQ(PairScores(*pairwise, Embeddings({{1, 0}, {0, 1}, {1, 1}})).status().code(),
            absl::StatusCode::kInternal);
  EXPECT_EQ(PairScores(*pairwise, Embeddings({{1, 0}, {0, 1}, {1, 1}, {1}})).status().code(),
            absl::StatusCode::kInternal);
}

TEST(ScoreFieldNamesTest, EncodeFailuresNameWhatTheClientSent) {
  absl::StatusOr<ScoreCall> call = ParseRerankRequest(R"({"query": "q", "documents": ["a", "b"]})");
  ASSERT_TRUE(call.ok());
  EXPECT_EQ(WithScoreFieldNames(absl::InvalidArgumentError("inputs[2]: the input has 600 tokens"), *call).message(),
            "documents[1]: the input has 600 tokens");
  EXPECT_EQ(WithScoreFieldNames(absl::InvalidArgumentError("Encode: input 0: invalid UTF-8"), *call).message(),
            "Encode: query: invalid UTF-8");
  EXPECT_EQ(WithScoreFieldNames(absl::InvalidArgumentError(
                                    "inputs: 3 inputs; the limit is 2 (--encode-max-inputs-per-request)"),
                                *call)
                .message(),
            "too many texts: 3 to encode (1 + 2), each encoded once; the limit is 2 "
            "(--encode-max-inputs-per-request)");
  // Out of range, another code, or nothing to rename: as it was.
  EXPECT_EQ(WithScoreFieldNames(absl::InvalidArgumentError("inputs[7]: x"), *call).message(), "inputs[7]: x");
  EXPECT_EQ(WithScoreFieldNames(absl::ResourceExhaustedError("inputs[0]: queue"), *call).message(),
            "inputs[0]: queue");
  EXPECT_EQ(WithScoreFieldNames(absl::InvalidArgumentError("bad"), *call).message(), "bad");
}

TEST(ScoreResponseTest, VllmsScoreAndRerankShapesAndTeisList) {
  const json score = ScoreResponse({0.5, -0.25}, 7, "score-1", "enc", 1700000000);
  EXPECT_EQ(score, json::parse(R"({"id": "score-1", "object": "list", "created": 1700000000, "model": "enc",
      "data": [{"index": 0, "object": "score", "score": 0.5}, {"index": 1, "object": "score", "score": -0.25}],
      "usage": {"prompt_tokens": 7, "total_tokens": 7, "completion_tokens": 0}})"));

  absl::StatusOr<ScoreCall> call = ParseRerankRequest(R"({"query": "q", "documents": ["a", "b", "c", "d"]})");
  ASSERT_TRUE(call.ok());
  // Best first; equal scores keep the documents' order.
  json rerank = RerankResponse(*call, {0.1, 0.9, 0.1, 0.5}, 9, "rerank-1", "enc");
  std::vector<int> order;
  for (const json& r : rerank["results"]) order.push_back(r["index"].get<int>());
  EXPECT_THAT(order, ElementsAre(1, 3, 0, 2));
  EXPECT_EQ(rerank["results"][0], json::parse(R"({"index": 1, "relevance_score": 0.9, "document": {"text": "b"}})"));
  EXPECT_EQ(rerank["usage"], json::parse(R"({"prompt_tokens": 9, "total_tokens": 9})"));
  EXPECT_EQ(rerank["id"], "rerank-1");
  call->top_n = 2;
  call->return_documents = false;
  rerank = RerankResponse(*call, {0.1, 0.9, 0.1, 0.5}, 9, "rerank-1", "enc");
  EXPECT_EQ(rerank["results"], json::parse(R"([{"index": 1, "relevance_score": 0.9},
                                               {"index": 3, "relevance_score": 0.5}])"));
  call->top_n = 10;  // more than there are: all
  EXPECT_EQ(RerankResponse(*call, {0.1, 0.9, 0.1, 0.5}, 9, "r", "enc")["results"].size(), 4u);

  EXPECT_EQ(SimilarityResponse({1.0, 0.25}), json({1.0f, 0.25f}));
}

TEST(CrossEncoderScoreTest, PairsBecomeOneInputEachAndScoreAsSigmoids) {
  absl::StatusOr<ScoreCall> call = ParseScoreRequest(R"({"text_1": "q", "text_2": ["a", "b"]})");
  ASSERT_TRUE(call.ok());
  // An embedding model: unchanged.
  ASSERT_TRUE(UseCrossEncoder({}, &*call).ok());
  EXPECT_FALSE(call->cross);
  EXPECT_THAT(Texts(*call), ElementsAre("q", "a", "b"));
  ASSERT_TRUE(UseCrossEncoder({"LABEL_0"}, &*call).ok());
  EXPECT_TRUE(call->cross);
  ASSERT_EQ(call->request.inputs_size(), 2);
  EXPECT_EQ(call->request.inputs(0).text(), "q");
  EXPECT_EQ(call->request.inputs(0).text_pair(), "a");
  EXPECT_EQ(call->request.inputs(1).text_pair(), "b");
  EXPECT_EQ(call->right(), 2);
  EXPECT_THAT(call->fields, ElementsAre("text_2[0]", "text_2[1]"));
  absl::StatusOr<std::vector<double>> scores = PairScores(*call, Logits({{0.0f}, {2.0f}}));
  ASSERT_TRUE(scores.ok()) << scores.status();
  EXPECT_DOUBLE_EQ((*scores)[0], 0.5);
  EXPECT_NEAR((*scores)[1], 1 / (1 + std::exp(-2.0)), 1e-12);
  call->raw_scores = true;
  scores = PairScores(*call, Logits({{0.0f}, {2.0f}}));
  ASSERT_TRUE(scores.ok());
  EXPECT_DOUBLE_EQ((*scores)[1], 2.0);
  EXPECT_EQ(PairScores(*call, Logits({{0.0f, 1.0f}, {2.0f}})).status().code(), absl::StatusCode::kInternal);
  EXPECT_EQ(WithScoreFieldNames(absl::InvalidArgumentError("inputs[1]: the input has 600 tokens"), *call).message(),
            "text_2[1]: the input has 600 tokens");
  EXPECT_EQ(WithScoreFieldNames(absl::InvalidArgumentError(
                                    "inputs: 2 inputs; the limit is 1 (--encode-max-inputs-per-request)"),
                                *call)
                .message(),
            "too many pairs: 2 to score, each one input to the cross-encoder; the limit is 1 "
            "(--encode-max-inputs-per-request)");

  // N:N pairs i with i.
  call = ParseScoreRequest(R"({"text_1": ["p", "q"], "text_2": ["a", "b"]})");
  ASSERT_TRUE(UseCrossEncoder({"LABEL_0"}, &*call).ok());
  EXPECT_EQ(call->request.inputs(1).text(), "q");
  EXPECT_EQ(call->request.inputs(1).text_pair(), "b");
  // A classifier with several labels does not score pairs.
  call = ParseScoreRequest(R"({"text_1": "q", "text_2": "a"})");
  absl::Status s = UseCrossEncoder({"contradiction", "entailment", "neutral"}, &*call);
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("classifier with 3 labels (contradiction, entailment, neutral)"));
}

TEST(TeiRerankTest, TextsRawScoresReturnTextAndTruncation) {
  const json root = json::parse(R"({"query": "q", "texts": ["a", "b", "c"], "return_text": true})");
  EXPECT_TRUE(IsTeiRerank(root));
  EXPECT_FALSE(IsTeiRerank(json::parse(R"({"query": "q", "documents": ["a"], "texts": ["b"]})")));
  absl::StatusOr<ScoreCall> call = ParseTeiRerankJson(root);
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_THAT(Texts(*call), ElementsAre("q", "a", "b", "c"));
  EXPECT_EQ(call->request.truncation(), v1::TRUNCATION_NONE);  // TEI refuses over-long inputs by default
  EXPECT_FALSE(call->raw_scores);
  EXPECT_EQ(TeiRerankResponse(*call, {0.25, 0.75, 0.25}),
            json::parse(R"([{"index": 1, "score": 0.75, "text": "b"}, {"index": 0, "score": 0.25, "text": "a"},
                            {"index": 2, "score": 0.25, "text": "c"}])"));
  call = ParseTeiRerankJson(json::parse(R"({"query": "q", "texts": ["a"], "raw_scores": true, "truncate": true})"));
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_TRUE(call->raw_scores);
  EXPECT_EQ(call->request.truncation(), v1::TRUNCATION_END);
  EXPECT_EQ(TeiRerankResponse(*call, {-1.5}), json::parse(R"([{"index": 0, "score": -1.5}])"));
  const std::pair<const char*, const char*> bad[] = {
      {R"({"texts": ["a"]})", "query: required"},
      {R"({"query": "q", "texts": []})", "texts: must not be empty"},
      {R"({"query": "q", "texts": [1]})", "texts[0]"},
      {R"({"query": "q", "texts": ["a"], "raw_scores": "yes"})", "raw_scores"},
  };
  for (const auto& [body, expected] : bad) ExpectRefused(ParseTeiRerankJson(json::parse(body)), expected, body);
}

}  // namespace
}  // namespace attnserve
