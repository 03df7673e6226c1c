// InferenceService: the gRPC adapter for attnserve.v1.Inference on the
// callback API (no thread per request). Handlers are thin: read the deadline,
// hand the request to InferenceCore, convert the status once (status_util),
// record metrics. Client cancellation and disconnects set the request's
// RequestControl so the scheduler frees its resources. With an API key every
// method first checks the `authorization` metadata (UNAUTHENTICATED
// otherwise); health and reflection are separate services and stay open.
// Thread-safe.
#ifndef ATTNSERVE_SERVER_GRPC_INFERENCE_SERVICE_H_
#define ATTNSERVE_SERVER_GRPC_INFERENCE_SERVICE_H_

#include <memory>
#include <string>
#include <utility>

#include "attnserve/v1/inference.grpc.pb.h"
#include "server/core/api_key.h"
#include "server/core/inference_core.h"
#include "server/metrics/metrics.h"

namespace attnserve {

class InferenceService final : public attnserve::v1::Inference::CallbackService {
 public:
  // api_key: empty = no check (server/core/api_key.h).
  InferenceService(InferenceCore* core, ServerMetrics* metrics, std::string api_key = "")
      : core_(core), metrics_(metrics), auth_(std::move(api_key)) {}

  grpc::ServerUnaryReactor* Encode(grpc::CallbackServerContext* context, const v1::EncodeRequest* request,
                                   v1::EncodeResponse* response) override;
  grpc::ServerWriteReactor<v1::GenerateResponse>* Generate(grpc::CallbackServerContext* context,
                                                           const v1::GenerateRequest* request) override;
  grpc::ServerUnaryReactor* Tokenize(grpc::CallbackServerContext* context, const v1::TokenizeRequest* request,
                                     v1::TokenizeResponse* response) override;
  grpc::ServerUnaryReactor* Detokenize(grpc::CallbackServerContext* context, const v1::DetokenizeRequest* request,
                                       v1::DetokenizeResponse* response) override;
  grpc::ServerUnaryReactor* GetModelInfo(grpc::CallbackServerContext* context,
                                         const v1::GetModelInfoRequest* request,
                                         v1::GetModelInfoResponse* response) override;

 private:
  // The request's control: its deadline, and its id (the client's
  // x-request-id metadata when usable, else a new one), which the answer's
  // initial metadata carries back.
  std::shared_ptr<RequestControl> NewControl(grpc::CallbackServerContext& context);
  grpc::ServerUnaryReactor* FinishUnary(grpc::CallbackServerContext* context, const char* rpc,
                                        const absl::Status& status);
  // OK, or UNAUTHENTICATED when an API key is set and the call lacks it.
  absl::Status Authorize(const grpc::CallbackServerContext& context) const;

  InferenceCore* core_;      // not owned
  ServerMetrics* metrics_;   // not owned
  const ApiKeyCheck auth_;
};

// The request's deadline as absl::Time (InfiniteFuture when the client set none).
absl::Time DeadlineOf(const grpc::CallbackServerContext& context);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_GRPC_INFERENCE_SERVICE_H_
