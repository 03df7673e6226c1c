// The `attnserve healthcheck` client: one HTTP GET against a running server,
// so the container's HEALTHCHECK needs no curl.
#ifndef ATTNSERVE_SERVER_HEALTH_PROBE_H_
#define ATTNSERVE_SERVER_HEALTH_PROBE_H_

#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace attnserve {

// GET http://host:port/path; OK when the answer is 200 within `timeout`,
// else a status saying what happened.
absl::Status ProbeHttp(const std::string& host, int port, const std::string& path, absl::Duration timeout);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HEALTH_PROBE_H_
