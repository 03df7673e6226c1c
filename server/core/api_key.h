// API key check shared by both doors.
//
// With --api-key (or the ATTNSERVE_API_KEY environment variable, which keeps
// the key out of `ps`), every inference call must carry
// `Authorization: Bearer <key>` (HTTP header, or gRPC `authorization`
// metadata), as vLLM, TGI and TEI do with their --api-key. Probes and
// metrics stay open: /healthz, /readyz, /metrics and gRPC health and
// reflection, so Kubernetes and Prometheus need no secret.
#ifndef ATTNSERVE_SERVER_CORE_API_KEY_H_
#define ATTNSERVE_SERVER_CORE_API_KEY_H_

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace attnserve {

class ApiKeyCheck {
 public:
  // An empty key lets every call through.
  explicit ApiKeyCheck(std::string key) : key_(std::move(key)) {}

  bool enabled() const { return !key_.empty(); }

  // OK when no key is configured or `authorization` is "Bearer <key>" (the
  // scheme in any case); else UNAUTHENTICATED saying what is missing, never
  // echoing what was sent. The comparison takes the same time wherever the
  // first difference is.
  absl::Status Check(absl::string_view authorization) const;

 private:
  std::string key_;
};

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_CORE_API_KEY_H_
