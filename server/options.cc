#include "server/options.h"

#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"

namespace attnserve {
namespace {

absl::Status CheckPort(const char* flag, int port) {
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", port, ": must be in [0, 65535]"));
  }
  return absl::OkStatus();
}

absl::Status CheckModelPath(const char* flag, const std::string& path) {
  if (path.empty()) return absl::OkStatus();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return absl::NotFoundError(absl::StrCat("--", flag, ": path '", path, "' does not exist"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateOptions(const ServerOptions& o) {
  if (absl::Status s = CheckPort("grpc-port", o.network.grpc_port); !s.ok()) return s;
  if (absl::Status s = CheckPort("http-port", o.network.http_port); !s.ok()) return s;
  if (o.network.grpc_port != 0 && o.network.grpc_port == o.network.http_port) {
    return absl::InvalidArgumentError(
        absl::StrCat("--grpc-port and --http-port are both ", o.network.grpc_port, "; they must differ"));
  }
  if (o.network.http_threads < 1) {
    return absl::InvalidArgumentError("--http-threads: must be >= 1");
  }
  if (o.network.http_max_body_bytes < 1024) {
    return absl::InvalidArgumentError("--http-max-body-bytes: must be >= 1024");
  }
  if (o.engine.threads < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--threads=", o.engine.threads, ": must be >= 0 (0 = all cores)"));
  }
  if (o.engine.kv_cache_bytes <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("--kv-cache-bytes=", o.engine.kv_cache_bytes, ": must be > 0"));
  }
  if (o.queue.max_queue < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--max-queue=", o.queue.max_queue, ": must be >= 1"));
  }
  if (o.queue.drain_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--drain-timeout: must be >= 0");
  }
  if (absl::Status s = CheckModelPath("encoder-model", o.models.encoder_model); !s.ok()) return s;
  if (absl::Status s = CheckModelPath("decoder-model", o.models.decoder_model); !s.ok()) return s;
  return absl::OkStatus();
}

}  // namespace attnserve
