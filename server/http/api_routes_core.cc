// ApiRoutes over the real InferenceCore. Apart from api_routes.cc so that the
// gateway's tests, which use a fake backend, link without the core.
#include "server/http/api_routes.h"

namespace attnserve {

std::map<std::string, HttpHandler> ApiRoutes(InferenceCore* core, ServerMetrics* metrics,
                                             const GatewayOptions& options) {
  GatewayBackend backend;
  backend.encode = [core](const v1::EncodeRequest& request, std::shared_ptr<RequestControl> control,
                          EncodeDone done) { core->Encode(request, std::move(control), std::move(done)); };
  backend.generate = [core](const v1::GenerateRequest& request, std::shared_ptr<RequestControl> control,
                            GenerateSink sink) { core->Generate(request, std::move(control), std::move(sink)); };
  backend.tokenize = [core](const v1::TokenizeRequest& request) { return core->Tokenize(request); };
  backend.detokenize = [core](const v1::DetokenizeRequest& request) { return core->Detokenize(request); };
  backend.model_info = [core](const v1::GetModelInfoRequest& request) { return core->GetModelInfo(request); };
  backend.encoder_name = core->has_encoder() ? core->encoder_name() : "";
  if (core->has_encoder()) {
    v1::GetModelInfoRequest encoder;
    encoder.set_model(v1::MODEL_KIND_ENCODER);
    const v1::GetModelInfoResponse models = core->GetModelInfo(encoder);
    for (const v1::ModelInfo& info : models.models()) {
      backend.encoder_labels.assign(info.labels().begin(), info.labels().end());
      backend.encoder_sparse = info.pooling() == "splade";
    }
  }
  backend.decoder_name = core->has_decoder() ? core->decoder_name() : "";
  backend.chat_shows_tools = core->has_decoder() && core->chat_shows_tools();
  backend.new_request_id = [core]() { return core->NewRequestId(); };
  return ApiRoutes(std::move(backend), metrics, options);
}

}  // namespace attnserve
