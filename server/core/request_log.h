// Request ids and the one-line-per-request log.
//
// Every Encode and Generate gets an id: the client's own (`X-Request-Id`
// header on HTTP, `x-request-id` metadata on gRPC) when it is a usable
// token, else one the server makes. The doors send it back (same header /
// initial metadata), so a client, a proxy's access log and this server's log
// can be matched.
//
// When the request ends (answered, refused or failed) the server logs one
// line, as TGI and TEI do, in logfmt (key=value, values with spaces quoted)
// so it can be grepped and parsed:
//
//   request id=7f3a9c01000004 rpc=Generate code=ok total_ms=12.41 queue_ms=0.06
//     ttft_ms=0.30 prompt_tokens=5 generated_tokens=64 finish=length
//     ms_per_token=0.19 peak_kv_bytes=20480 preemptions=0
//
// No prompt or output text is logged (it may be private); an error's
// message is, quoted and cut to 200 bytes.
#ifndef ATTNSERVE_SERVER_CORE_REQUEST_LOG_H_
#define ATTNSERVE_SERVER_CORE_REQUEST_LOG_H_

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace attnserve {

// The longest client request id kept; longer ones are replaced.
inline constexpr size_t kMaxRequestIdBytes = 128;

// `id` if a client may name its request that: 1 to kMaxRequestIdBytes
// bytes of letters, digits and "-_.:/+=@" (what trace and request ids use;
// nothing that could break a log line or a header). Else nullopt.
std::optional<std::string> ValidClientRequestId(absl::string_view id);

// Makes this server's request ids: the server's start time and a counter,
// in hex ("6a4f1c2b000001"), unique per process and across restarts.
// Thread-safe.
class RequestIdMaker {
 public:
  explicit RequestIdMaker(absl::Time start);
  std::string Next();

 private:
  const uint32_t prefix_;
  std::atomic<uint64_t> next_{0};
};

// What a finished request's log line says. Fields left unset are omitted.
struct RequestLogEntry {
  absl::string_view id;
  absl::string_view rpc;  // "Encode", "Generate"
  absl::Status status;
  absl::Duration total;  // from arrival at the core to the answer (0: refused at the door)
  std::optional<absl::Duration> queue;
  std::optional<absl::Duration> time_to_first_token;
  std::optional<absl::Duration> compute;  // encode: engine time for its batches
  std::optional<int64_t> inputs;          // encode
  std::optional<int64_t> prompt_tokens;
  std::optional<int64_t> padded_tokens;   // encode
  std::optional<int64_t> generated_tokens;
  absl::string_view finish;                // generate: "length", "stop", ...
  std::optional<int64_t> peak_kv_bytes;
  std::optional<int64_t> preemptions;
};

// The line, without a trailing newline.
std::string FormatRequestLog(const RequestLogEntry& entry);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_CORE_REQUEST_LOG_H_
