// Small pieces every gateway route shares: the JSON error body for an
// absl::Status, server-sent-event framing, and the per-request deadline
// header.
#ifndef ATTNSERVE_SERVER_HTTP_GATEWAY_UTIL_H_
#define ATTNSERVE_SERVER_HTTP_GATEWAY_UTIL_H_

#include <map>
#include <string>
#include "absl/strings/string_view.h"
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace attnserve {

// The header that sets a request's deadline: seconds from arrival, decimal
// (e.g. "2.5"). Past it the request ends with DEADLINE_EXCEEDED (HTTP 504)
// and its KV blocks are freed.
inline constexpr char kRequestTimeoutHeader[] = "x-request-timeout";

// {"error":{"code":"invalid_argument","message":...}} for a non-OK status.
std::string StatusJson(const absl::Status& status);

// Headers that go with an error status: Retry-After on 429, so clients back
// off instead of retrying at once.
std::vector<std::pair<std::string, std::string>> ErrorHeaders(const absl::Status& status, int retry_after_seconds);

// One server-sent event: "data: <payload>\n\n", or with an event name
// "event: <name>\ndata: <payload>\n\n". `payload` must be one line (JSON
// without raw newlines is).
std::string SseEvent(absl::string_view payload, absl::string_view event = "");

// The deadline from `headers` (names lower-cased): InfiniteFuture without the
// header; INVALID_ARGUMENT naming the header when it is not a positive number
// of seconds.
absl::StatusOr<absl::Time> RequestDeadline(const std::map<std::string, std::string>& headers, absl::Time now);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_GATEWAY_UTIL_H_
