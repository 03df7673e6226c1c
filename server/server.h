// Server: owns both doors (gRPC and HTTP), the metrics registry and the
// serving state. Lifecycle:
//
//   Create() --> SERVING --Drain()--> DRAINING --(in-flight done | deadline)--> STOPPED
//
// In DRAINING, /readyz answers 503, gRPC health NOT_SERVING, new work is
// refused with UNAVAILABLE, and in-flight requests may finish until the drain
// deadline; what is left then ends with UNAVAILABLE.
// Thread-safe.
#ifndef ATTNSERVE_SERVER_SERVER_H_
#define ATTNSERVE_SERVER_SERVER_H_

#include <atomic>
#include <memory>

#include "absl/status/statusor.h"
#include "grpcpp/server.h"
#include "server/core/inference_core.h"
#include "server/grpc/inference_service.h"
#include "server/http/http_server.h"
#include "server/metrics/metrics.h"
#include "server/options.h"

namespace attnserve {

class Server {
 public:
  // Validates options, loads models, binds both ports and starts serving.
  static absl::StatusOr<std::unique_ptr<Server>> Create(const ServerOptions& options);
  ~Server();

  int grpc_port() const { return grpc_port_; }
  int http_port() const { return http_->port(); }

  // Stops accepting work and waits for in-flight work up to the drain timeout;
  // then cancels what is left and stops both doors. Idempotent.
  void Drain();

  bool ready() const { return state_.load() == State::kServing; }

 private:
  enum class State { kServing, kDraining, kStopped };
  void StopDoors();  // shuts both doors down at once (start-up failure)

  explicit Server(const ServerOptions& options);
  std::map<std::string, HttpHandler> HttpRoutes();

  ServerOptions options_;
  std::atomic<State> state_{State::kStopped};  // kServing once Create() succeeds
  std::unique_ptr<ServerMetrics> metrics_;
  std::unique_ptr<InferenceCore> core_;
  std::unique_ptr<InferenceService> inference_;
  std::unique_ptr<grpc::Server> grpc_;
  std::unique_ptr<HttpServer> http_;
  int grpc_port_ = 0;
};

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_SERVER_H_
