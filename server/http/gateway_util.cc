#include "server/http/gateway_util.h"

#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "server/http/http_server.h"
#include "server/http/json_body.h"
#include "server/status_util.h"

namespace attnserve {

std::string StatusJson(const absl::Status& status) {
  return JsonError(StatusCodeName(status.code()), SanitizeUtf8(status.message()));
}

std::vector<std::pair<std::string, std::string>> ErrorHeaders(const absl::Status& status, int retry_after_seconds) {
  if (status.code() == absl::StatusCode::kResourceExhausted) {
    return {{"Retry-After", std::to_string(retry_after_seconds)}};
  }
  return {};
}

std::string SseEvent(absl::string_view payload, absl::string_view event) {
  if (event.empty()) return absl::StrCat("data: ", payload, "\n\n");
  return absl::StrCat("event: ", event, "\ndata: ", payload, "\n\n");
}

absl::StatusOr<absl::Time> RequestDeadline(const std::map<std::string, std::string>& headers, absl::Time now) {
  auto it = headers.find(kRequestTimeoutHeader);
  if (it == headers.end()) return absl::InfiniteFuture();
  double seconds = 0;
  // A day is far beyond any sensible request; larger values are typos.
  if (!absl::SimpleAtod(it->second, &seconds) || !std::isfinite(seconds) || seconds <= 0 || seconds > 86400) {
    return absl::InvalidArgumentError(absl::StrCat("header X-Request-Timeout: '", SanitizeUtf8(it->second),
                                                   "' is not a number of seconds in (0, 86400]"));
  }
  return now + absl::Seconds(seconds);
}

}  // namespace attnserve
