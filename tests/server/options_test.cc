#include "server/options.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

using ::testing::HasSubstr;

TEST(OptionsTest, DefaultsAreValid) { EXPECT_TRUE(ValidateOptions(ServerOptions{}).ok()); }

TEST(OptionsTest, MissingModelPathNamesFlagAndPath) {
  ServerOptions o;
  o.models.encoder_model = "/nonexistent/model-dir";
  const absl::Status s = ValidateOptions(o);
  EXPECT_EQ(s.code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.message(), HasSubstr("--encoder-model"));
  EXPECT_THAT(s.message(), HasSubstr("/nonexistent/model-dir"));
}

TEST(OptionsTest, BadValuesNameTheFlag) {
  ServerOptions o;
  o.network.grpc_port = 70000;
  EXPECT_THAT(ValidateOptions(o).message(), HasSubstr("--grpc-port"));
  o = ServerOptions{};
  o.queue.max_queue = 0;
  EXPECT_THAT(ValidateOptions(o).message(), HasSubstr("--max-queue"));
  o = ServerOptions{};
  o.engine.kv_cache_bytes = 0;
  EXPECT_THAT(ValidateOptions(o).message(), HasSubstr("--kv-cache-bytes"));
  o = ServerOptions{};
  o.models.matmul_precision = "fp8";
  EXPECT_THAT(ValidateOptions(o).message(), HasSubstr("--matmul-precision=fp8"));
  o.models.matmul_precision = "bf16";
  EXPECT_TRUE(ValidateOptions(o).ok());
  o = ServerOptions{};
  o.models.chat_template = "vicuna";
  EXPECT_EQ(ValidateOptions(o).message(),
            "--chat-template=vicuna: must be one of chatml, llama2, llama3, zephyr, gemma, phi3, mistral, qwen2, "
            "llama3.1, qwen2.5, gemma3, qwen3, llama3.2, phi3.5, phi4-mini, phi4, granite3");
  o.models.chat_template = "zephyr";
  EXPECT_TRUE(ValidateOptions(o).ok());
  o = ServerOptions{};
  o.models.tool_call_parser = "xml";
  EXPECT_EQ(ValidateOptions(o).message(), "--tool-call-parser=xml: must be llama3_json, hermes or empty");
  for (const char* parser : {"llama3_json", "hermes"}) {
    o.models.tool_call_parser = parser;
    EXPECT_TRUE(ValidateOptions(o).ok()) << parser;
  }
  o = ServerOptions{};
  o.models.reasoning_parser = "r1";
  EXPECT_EQ(ValidateOptions(o).message(), "--reasoning-parser=r1: must be deepseek_r1, qwen3 or empty");
  for (const char* parser : {"deepseek_r1", "qwen3"}) {
    o.models.reasoning_parser = parser;
    EXPECT_TRUE(ValidateOptions(o).ok()) << parser;
  }
  o.models.structured_outputs_in_reasoning = true;
  EXPECT_TRUE(ValidateOptions(o).ok());
  o.models.reasoning_parser.clear();
  EXPECT_EQ(ValidateOptions(o).message(),
            "--structured-outputs-in-reasoning: only with --reasoning-parser (without one nothing is thinking)");
  o = ServerOptions{};
  o.models.thinking_token_budget = 100;
  EXPECT_EQ(ValidateOptions(o).message(),
            "--thinking-token-budget: only with --reasoning-parser (which says where the thinking ends)");
  o.models.reasoning_parser = "qwen3";
  EXPECT_TRUE(ValidateOptions(o).ok());
  o.models.thinking_token_budget = -2;
  EXPECT_EQ(ValidateOptions(o).message(), "--thinking-token-budget=-2: must be >= 0, or -1 (none)");
  o = ServerOptions{};
  o.network.http_port = o.network.grpc_port;
  EXPECT_THAT(ValidateOptions(o).message(), HasSubstr("must differ"));
}

TEST(OptionsTest, HttpThreadsByDefaultHoldEveryRequestTheCoreCanHoldPlusTheReserve) {
  ServerOptions o;
  EXPECT_EQ(o.network.http_threads, 0);
  EXPECT_EQ(HttpThreads(o), 64 + 256 + kHttpReservedThreads);
  EXPECT_EQ(HttpMaxInferenceCalls(o), 64 + 256);
  o.queue.max_queue = 10;
  o.batching.max_running_sequences = 3;
  EXPECT_EQ(HttpThreads(o), 13 + kHttpReservedThreads);
  o.queue.max_queue = 100000;
  EXPECT_EQ(HttpThreads(o), kHttpMaxThreads);
  EXPECT_EQ(HttpMaxInferenceCalls(o), kHttpMaxThreads - kHttpReservedThreads);
  o.network.http_threads = 9;
  EXPECT_TRUE(ValidateOptions(o).ok());
  EXPECT_EQ(HttpThreads(o), 9);
  EXPECT_EQ(HttpMaxInferenceCalls(o), 9 - kHttpReservedThreads);
}

TEST(OptionsTest, HttpThreadsMustLeaveOneForInferenceBesideTheReserve) {
  ServerOptions o;
  o.network.http_threads = kHttpReservedThreads;
  absl::Status s = ValidateOptions(o);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("--http-threads=4: must be 0 (auto) or in [5, 1024]"));
  o.network.http_threads = kHttpMaxThreads + 1;
  EXPECT_THAT(ValidateOptions(o).message(), HasSubstr("--http-threads=1025"));
  o.network.http_threads = -1;
  EXPECT_THAT(ValidateOptions(o).message(), HasSubstr("--http-threads=-1"));
  o.network.http_threads = kHttpReservedThreads + 1;
  EXPECT_TRUE(ValidateOptions(o).ok());
}

}  // namespace
}  // namespace attnserve
