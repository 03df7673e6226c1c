#include "server/status_util.h"

#include "gtest/gtest.h"

namespace attnserve {
namespace {

TEST(StatusUtilTest, GrpcCodeAndMessageCarryOver) {
  const grpc::Status s = ToGrpcStatus(absl::ResourceExhaustedError("queue is full (256)"));
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED);
  EXPECT_EQ(s.error_message(), "queue is full (256)");
  EXPECT_TRUE(ToGrpcStatus(absl::OkStatus()).ok());
}

TEST(StatusUtilTest, HttpCodes) {
  EXPECT_EQ(ToHttpStatus(absl::StatusCode::kInvalidArgument), 400);
  EXPECT_EQ(ToHttpStatus(absl::StatusCode::kResourceExhausted), 429);
  EXPECT_EQ(ToHttpStatus(absl::StatusCode::kDeadlineExceeded), 504);
  EXPECT_EQ(ToHttpStatus(absl::StatusCode::kUnavailable), 503);
  EXPECT_EQ(ToHttpStatus(absl::StatusCode::kCancelled), 499);
  EXPECT_EQ(ToHttpStatus(absl::StatusCode::kInternal), 500);
  EXPECT_EQ(ToHttpStatus(absl::StatusCode::kUnauthenticated), 401);
  EXPECT_EQ(ToHttpStatus(absl::StatusCode::kPermissionDenied), 403);
  EXPECT_STREQ(StatusCodeName(absl::StatusCode::kInvalidArgument), "invalid_argument");
}

}  // namespace
}  // namespace attnserve
