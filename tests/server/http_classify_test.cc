// Classification's pure mapping (server/http/classify_api.h): TEI's
// /predict and vLLM's /classify bodies onto one Encode request with text
// pairs, and the answers' probabilities. The real binary and
// sentence-transformers' CrossEncoder in
// tests/integration/test_http_cross_encoder.py.
#include "server/http/classify_api.h"

#include <cmath>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/server/encode_responses.h"

namespace attnserve {
namespace {

using ::nlohmann::json;
using ::testing::HasSubstr;
using testing_util::Logits;

TEST(PredictRequestTest, StringPairAndBatchShapes) {
  absl::StatusOr<ClassifyCall> call = ParsePredictRequest(R"({"inputs": "a"})");
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_FALSE(call->batch);
  ASSERT_EQ(call->request.inputs_size(), 1);
  EXPECT_FALSE(call->request.inputs(0).has_text_pair());
  EXPECT_EQ(call->request.truncation(), v1::TRUNCATION_NONE);

  call = ParsePredictRequest(R"({"inputs": ["a", "b"], "raw_scores": true, "truncate": true})");
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_FALSE(call->batch);  // one pair, not two texts
  ASSERT_EQ(call->request.inputs_size(), 1);
  EXPECT_EQ(call->request.inputs(0).text_pair(), "b");
  EXPECT_TRUE(call->raw_scores);
  EXPECT_EQ(call->request.truncation(), v1::TRUNCATION_END);

  call = ParsePredictRequest(R"({"inputs": [["a"], ["b", "c"]]})");
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_TRUE(call->batch);
  ASSERT_EQ(call->request.inputs_size(), 2);
  EXPECT_FALSE(call->request.inputs(0).has_text_pair());
  EXPECT_EQ(call->request.inputs(1).text(), "b");
  EXPECT_EQ(call->request.inputs(1).text_pair(), "c");

  const std::pair<const char*, const char*> bad[] = {
      {R"({})", "inputs: required"},
      {R"({"inputs": []})", "inputs"},
      {R"({"inputs": 5})", "inputs"},
      {R"({"inputs": ["a", "b", "c"]})", "inputs"},
      {R"({"inputs": [["a"], "b"]})", "inputs[1]"},
      {R"({"inputs": [["a", 2]]})", "inputs[0][1]"},
      {R"({"inputs": "a", "raw_scores": 1})", "raw_scores"},
  };
  for (const auto& [body, expected] : bad) {
    absl::StatusOr<ClassifyCall> refused = ParsePredictRequest(body);
    EXPECT_EQ(refused.status().code(), absl::StatusCode::kInvalidArgument) << body;
    EXPECT_THAT(refused.status().message(), HasSubstr(expected)) << body;
  }
}

TEST(ClassifyRequestTest, VllmInput) {
  absl::StatusOr<ClassifyCall> call = ParseClassifyRequest(R"({"model": "m", "input": ["a", "b"]})");
  ASSERT_TRUE(call.ok()) << call.status();
  EXPECT_EQ(call->request.inputs_size(), 2);
  EXPECT_EQ(ParseClassifyRequest(R"({"input": []})").status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(ParseClassifyRequest(R"({"input": [1]})").status().message(), HasSubstr("input[0]"));
  EXPECT_THAT(ParseClassifyRequest(R"({"input": "a", "priority": 3})").status().message(), HasSubstr("priority"));
}

TEST(ClassifyAnswerTest, SigmoidOfOneSoftmaxOfSeveralBestFirst) {
  EXPECT_TRUE(RequireClassifier({"LABEL_0"}, "/predict").ok());
  absl::Status s = RequireClassifier({}, "/predict");
  EXPECT_EQ(s.code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(s.message(), HasSubstr("/predict needs an encoder with a classification head"));

  v1::EncodeResponse three = Logits({{0.0f, std::log(3.0f), 0.0f}});
  three.mutable_usage()->set_prompt_tokens(11);
  std::vector<double> p = LabelProbabilities(three.results(0).logits());
  EXPECT_NEAR(p[0], 0.2, 1e-7);
  EXPECT_NEAR(p[1], 0.6, 1e-7);
  const std::vector<std::string> labels = {"no", "yes", "maybe"};
  ClassifyCall call;
  absl::StatusOr<json> predict = PredictResponse(call, three, labels);
  ASSERT_TRUE(predict.ok()) << predict.status();
  ASSERT_EQ(predict->size(), 3u);
  EXPECT_EQ((*predict)[0]["label"], "yes");
  EXPECT_NEAR((*predict)[0]["score"].get<double>(), 0.6, 1e-6);
  EXPECT_EQ((*predict)[1]["label"], "no");  // ties keep the labels' order
  EXPECT_EQ((*predict)[2]["label"], "maybe");
  call.batch = true;
  call.raw_scores = true;
  predict = PredictResponse(call, three, labels);
  ASSERT_TRUE(predict.ok());
  EXPECT_NEAR((*predict)[0][0]["score"].get<double>(), std::log(3.0), 1e-6);

  const v1::EncodeResponse one = Logits({{0.0f}});
  EXPECT_DOUBLE_EQ(LabelProbabilities(one.results(0).logits())[0], 0.5);
  EXPECT_EQ(PredictResponse(ClassifyCall(), one, labels).status().code(), absl::StatusCode::kInternal);

  absl::StatusOr<json> classify = ClassifyResponse(three, labels, "classify-1", "m", 1700000000);
  ASSERT_TRUE(classify.ok()) << classify.status();
  EXPECT_EQ((*classify)["data"][0]["label"], "yes");
  EXPECT_EQ((*classify)["data"][0]["num_classes"], 3);
  EXPECT_NEAR((*classify)["data"][0]["probs"][2].get<double>(), 0.2, 1e-7);
  EXPECT_EQ((*classify)["usage"], json::parse(R"({"prompt_tokens": 11, "total_tokens": 11, "completion_tokens": 0})"));
  EXPECT_EQ((*classify)["object"], "list");
}

}  // namespace
}  // namespace attnserve
