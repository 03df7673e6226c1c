#include "server/http/hf_info.h"

namespace attnserve {
namespace {

using nlohmann::json;

// TEI's names for the dtypes ("float16", "bfloat16", "float32").
std::string TeiDtype(const std::string& dtype) {
  if (dtype == "f32") return "float32";
  if (dtype == "bf16") return "bfloat16";
  if (dtype == "f16") return "float16";
  return dtype;
}

// TEI's pooling names: sentence-transformers' "lasttoken" is its "last_token".
std::string TeiPooling(const std::string& pooling) { return pooling == "lasttoken" ? "last_token" : pooling; }

}  // namespace

json TgiInfo(const v1::ModelInfo& decoder, const ServiceInfo& service) {
  return json{{"model_id", decoder.name()},
              {"model_sha", nullptr},
              {"model_pipeline_tag", "text-generation"},
              {"max_concurrent_requests", service.max_concurrent_requests},
              {"max_best_of", 1},
              {"max_stop_sequences", service.max_stop_sequences},
              {"max_input_tokens", decoder.max_input_tokens()},
              {"max_total_tokens", decoder.max_positions()},
              {"validation_workers", service.http_threads},
              {"max_client_batch_size", service.max_prompts_per_request},
              {"router", "attnserve"},
              {"version", service.version},
              {"sha", nullptr},
              {"docker_label", nullptr}};
}

json TeiInfo(const v1::ModelInfo& encoder, const ServiceInfo& service) {
  return json{{"model_id", encoder.name()},
              {"model_sha", nullptr},
              {"model_dtype", TeiDtype(encoder.weight_dtype())},
              {"model_type", {{"embedding", {{"pooling", TeiPooling(encoder.pooling())}}}}},
              {"max_concurrent_requests", service.max_concurrent_requests},
              {"max_input_length", encoder.max_input_tokens()},
              {"max_batch_tokens", service.encode_max_batch_tokens},
              {"max_batch_requests", service.encode_max_batch_size},
              {"max_client_batch_size", service.encode_max_inputs_per_request},
              {"auto_truncate", false},
              {"tokenization_workers", service.http_threads},
              {"version", service.version},
              {"sha", nullptr},
              {"docker_label", nullptr}};
}

}  // namespace attnserve
