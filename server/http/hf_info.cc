#include "server/http/hf_info.h"

#include <string>
#include <utility>

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

namespace {

// TEI's ModelType: a classification head with one label is a reranker,
// with more a classifier; else an embedding model and its pooling.
json TeiModelType(const v1::ModelInfo& encoder) {
  if (encoder.labels().empty()) return json{{"embedding", {{"pooling", TeiPooling(encoder.pooling())}}}};
  json id2label = json::object();
  json label2id = json::object();
  for (int i = 0; i < encoder.labels_size(); ++i) {
    id2label[std::to_string(i)] = encoder.labels(i);
    label2id[encoder.labels(i)] = i;
  }
  return json{{encoder.labels_size() == 1 ? "reranker" : "classifier",
               {{"id2label", std::move(id2label)}, {"label2id", std::move(label2id)}}}};
}

}  // namespace

json TeiInfo(const v1::ModelInfo& encoder, const ServiceInfo& service) {
  return json{{"model_id", encoder.name()},
              {"model_sha", nullptr},
              {"model_dtype", TeiDtype(encoder.weight_dtype())},
              {"model_type", TeiModelType(encoder)},
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
