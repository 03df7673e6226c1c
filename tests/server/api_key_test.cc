#include "server/core/api_key.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(ApiKeyCheckTest, NoKeyLetsEverythingThrough) {
  ApiKeyCheck open("");
  EXPECT_FALSE(open.enabled());
  EXPECT_TRUE(open.Check("").ok());
  EXPECT_TRUE(open.Check("Bearer anything").ok());
}

TEST(ApiKeyCheckTest, OnlyTheBearerKeyPasses) {
  ApiKeyCheck check("s3cret-key");
  EXPECT_TRUE(check.enabled());
  EXPECT_TRUE(check.Check("Bearer s3cret-key").ok());
  EXPECT_TRUE(check.Check("bearer s3cret-key").ok());    // the scheme in any case (RFC 7235)
  EXPECT_TRUE(check.Check("Bearer  s3cret-key ").ok());  // surrounding blanks
  for (const char* bad : {"", "s3cret-key", "Basic czNjcmV0LWtleQ==", "Bearer", "Bearer ", "Bearer s3cret-ke",
                          "Bearer s3cret-key2", "Bearer S3CRET-KEY", "Bearers3cret-key"}) {
    const absl::Status s = check.Check(bad);
    EXPECT_EQ(s.code(), absl::StatusCode::kUnauthenticated) << bad;
    EXPECT_THAT(s.message(), Not(HasSubstr("s3cret"))) << "never echo the key: " << bad;
  }
  EXPECT_THAT(check.Check("").message(), HasSubstr("Authorization: Bearer"));
}

}  // namespace
}  // namespace attnserve
