#include "server/core/request_log.h"

#include <set>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

TEST(RequestIdTest, ClientIdsAreKeptOnlyWhenSafeForLogsAndHeaders) {
  EXPECT_EQ(ValidClientRequestId("abc-123"), "abc-123");
  EXPECT_EQ(ValidClientRequestId("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"),
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01");  // a W3C traceparent
  EXPECT_EQ(ValidClientRequestId("svc/a_b.c:d+e=f@g"), "svc/a_b.c:d+e=f@g");
  EXPECT_EQ(ValidClientRequestId(std::string(kMaxRequestIdBytes, 'x')), std::string(kMaxRequestIdBytes, 'x'));
  EXPECT_FALSE(ValidClientRequestId(""));
  EXPECT_FALSE(ValidClientRequestId(std::string(kMaxRequestIdBytes + 1, 'x')));
  EXPECT_FALSE(ValidClientRequestId("has space"));
  EXPECT_FALSE(ValidClientRequestId("line\nbreak"));
  EXPECT_FALSE(ValidClientRequestId("quote\""));
  EXPECT_FALSE(ValidClientRequestId("caf\xC3\xA9"));
}

TEST(RequestIdTest, MadeIdsAreDistinctAndCarryTheStartTime) {
  RequestIdMaker maker(absl::FromUnixSeconds(0x6a4f1c2b));
  EXPECT_EQ(maker.Next(), "6a4f1c2b000000");
  EXPECT_EQ(maker.Next(), "6a4f1c2b000001");
  std::set<std::string> seen;
  for (int i = 0; i < 1000; ++i) seen.insert(maker.Next());
  EXPECT_EQ(seen.size(), 1000u);
  for (const std::string& id : seen) EXPECT_TRUE(ValidClientRequestId(id)) << id;  // echoed back as-is
}

TEST(RequestLogTest, GenerateLineHasEveryFieldInLogfmt) {
  RequestLogEntry e;
  e.id = "req-1";
  e.rpc = "Generate";
  e.status = absl::OkStatus();
  e.total = absl::Milliseconds(65);
  e.queue = absl::Microseconds(250);
  e.time_to_first_token = absl::Milliseconds(2);
  e.prompt_tokens = 5;
  e.generated_tokens = 64;
  e.finish = "length";
  e.peak_kv_bytes = 20480;
  e.preemptions = 0;
  EXPECT_EQ(FormatRequestLog(e),
            "request id=req-1 rpc=Generate code=ok total_ms=65.00 queue_ms=0.25 ttft_ms=2.00 prompt_tokens=5 "
            "generated_tokens=64 finish=length ms_per_token=1.00 peak_kv_bytes=20480 preemptions=0");
}

TEST(RequestLogTest, EncodeLineAndOmittedFields) {
  RequestLogEntry e;
  e.id = "x";
  e.rpc = "Encode";
  e.total = absl::Milliseconds(3);
  e.queue = absl::Milliseconds(1);
  e.compute = absl::Milliseconds(2);
  e.inputs = 2;
  e.prompt_tokens = 6;
  e.padded_tokens = 8;
  EXPECT_EQ(FormatRequestLog(e),
            "request id=x rpc=Encode code=ok total_ms=3.00 queue_ms=1.00 compute_ms=2.00 inputs=2 prompt_tokens=6 "
            "padded_tokens=8");
}

TEST(RequestLogTest, ErrorMessageIsQuotedEscapedOnOneLineAndCut) {
  RequestLogEntry e;
  e.id = "y";
  e.rpc = "Generate";
  e.status = absl::InvalidArgumentError("bad \"x\"\nnext \\ line");
  EXPECT_EQ(FormatRequestLog(e),
            "request id=y rpc=Generate code=invalid_argument total_ms=0.00 message=\"bad \\\"x\\\" next \\\\ line\"");
  // Long messages are cut at 200 bytes, never inside a UTF-8 character.
  std::string long_message(199, 'a');
  long_message += "\xC3\xA9tail";  // 'é' straddles the cut
  e.status = absl::InvalidArgumentError(long_message);
  const std::string line = FormatRequestLog(e);
  EXPECT_THAT(line, HasSubstr("message=\"" + std::string(199, 'a') + "\""));
  EXPECT_THAT(line, Not(HasSubstr("tail")));
}

TEST(RequestLogTest, NoPaceForASingleToken) {
  RequestLogEntry e;
  e.id = "z";
  e.rpc = "Generate";
  e.total = absl::Milliseconds(5);
  e.time_to_first_token = absl::Milliseconds(5);
  e.generated_tokens = 1;
  EXPECT_THAT(FormatRequestLog(e), Not(HasSubstr("ms_per_token")));
}

}  // namespace
}  // namespace attnserve
