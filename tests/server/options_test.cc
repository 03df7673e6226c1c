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
  o.network.http_port = o.network.grpc_port;
  EXPECT_THAT(ValidateOptions(o).message(), HasSubstr("must differ"));
}

}  // namespace
}  // namespace attnserve
