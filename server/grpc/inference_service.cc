#include "server/grpc/inference_service.h"

#include "server/status_util.h"

namespace attnserve {
namespace {

absl::Status NoEncoder() {
  return absl::FailedPreconditionError("no encoder model is loaded; start the server with --encoder-model DIR");
}
absl::Status NoDecoder() {
  return absl::FailedPreconditionError("no decoder model is loaded; start the server with --decoder-model PATH");
}

// A stream that ends at once with a status (no model, invalid request).
class FailedWriteReactor final : public grpc::ServerWriteReactor<v1::GenerateResponse> {
 public:
  explicit FailedWriteReactor(const absl::Status& status) { Finish(ToGrpcStatus(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

grpc::ServerUnaryReactor* InferenceService::FinishUnary(grpc::CallbackServerContext* context, const char* rpc,
                                                        const absl::Status& status) {
  metrics_->RecordRequest(rpc, status.code());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

grpc::ServerUnaryReactor* InferenceService::Encode(grpc::CallbackServerContext* context, const v1::EncodeRequest*,
                                                   v1::EncodeResponse*) {
  return FinishUnary(context, "Encode", NoEncoder());
}

grpc::ServerWriteReactor<v1::GenerateResponse>* InferenceService::Generate(grpc::CallbackServerContext*,
                                                                           const v1::GenerateRequest*) {
  const absl::Status status = NoDecoder();
  metrics_->RecordRequest("Generate", status.code());
  return new FailedWriteReactor(status);
}

grpc::ServerUnaryReactor* InferenceService::Tokenize(grpc::CallbackServerContext* context,
                                                     const v1::TokenizeRequest* request, v1::TokenizeResponse*) {
  return FinishUnary(context, "Tokenize",
                     request->model() == v1::MODEL_KIND_ENCODER ? NoEncoder() : NoDecoder());
}

grpc::ServerUnaryReactor* InferenceService::Detokenize(grpc::CallbackServerContext* context,
                                                       const v1::DetokenizeRequest* request,
                                                       v1::DetokenizeResponse*) {
  return FinishUnary(context, "Detokenize",
                     request->model() == v1::MODEL_KIND_ENCODER ? NoEncoder() : NoDecoder());
}

grpc::ServerUnaryReactor* InferenceService::GetModelInfo(grpc::CallbackServerContext* context,
                                                         const v1::GetModelInfoRequest*,
                                                         v1::GetModelInfoResponse*) {
  // No model is loaded yet: an empty list.
  return FinishUnary(context, "GetModelInfo", absl::OkStatus());
}

}  // namespace attnserve
