// InferenceService: the gRPC adapter for attnserve.v1.Inference on the
// callback API. Handlers are thin: validate, hand to core code, convert the
// status once (status_util), record metrics. Thread-safe.
#ifndef ATTNSERVE_SERVER_GRPC_INFERENCE_SERVICE_H_
#define ATTNSERVE_SERVER_GRPC_INFERENCE_SERVICE_H_

#include "attnserve/v1/inference.grpc.pb.h"
#include "server/metrics/metrics.h"

namespace attnserve {

class InferenceService final : public attnserve::v1::Inference::CallbackService {
 public:
  explicit InferenceService(ServerMetrics* metrics) : metrics_(metrics) {}

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
  // Finishes a unary call with `status` and records it.
  grpc::ServerUnaryReactor* FinishUnary(grpc::CallbackServerContext* context, const char* rpc,
                                        const absl::Status& status);

  ServerMetrics* metrics_;  // not owned
};

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_GRPC_INFERENCE_SERVICE_H_
