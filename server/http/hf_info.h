// GET /info as Hugging Face's servers answer it: TGI's Info for a decoder,
// TEI's for an encoder (huggingface_hub's InferenceClient.get_endpoint_info
// reads it; clients read max_input_tokens / max_input_length from it to cut
// their prompts). Pure functions of the loaded model and the server's limits.
#ifndef ATTNSERVE_SERVER_HTTP_HF_INFO_H_
#define ATTNSERVE_SERVER_HTTP_HF_INFO_H_

#include <cstdint>
#include <string>

#include "attnserve/v1/inference.pb.h"
#include "nlohmann/json.hpp"

namespace attnserve {

// The server's limits /info reports beside the model.
struct ServiceInfo {
  // Inference calls the HTTP door serves at once (past it: 429).
  int max_concurrent_requests = 0;
  // Stop strings one Generate request may carry.
  int max_stop_sequences = 0;
  // Prompts one /v1/completions request may carry (TGI's
  // max_client_batch_size).
  int max_prompts_per_request = 0;
  // Encode: padded tokens and inputs per batch, inputs per request
  // (--encode-max-batch-tokens, --encode-max-batch-size,
  // --encode-max-inputs-per-request).
  int64_t encode_max_batch_tokens = 0;
  int encode_max_batch_size = 0;
  int encode_max_inputs_per_request = 0;
  // Threads that parse, validate and tokenize HTTP requests.
  int http_threads = 0;
  std::string version;
};

// TGI 3's Info: {"model_id", "model_sha": null, "model_pipeline_tag":
// "text-generation", "max_concurrent_requests", "max_best_of": 1,
// "max_stop_sequences", "max_input_tokens" (ModelInfo's: the context less
// one), "max_total_tokens" (the context), "validation_workers",
// "max_client_batch_size", "router": "attnserve", "version", "sha": null,
// "docker_label": null}.
nlohmann::json TgiInfo(const v1::ModelInfo& decoder, const ServiceInfo& service);

// TEI's Info: {"model_id", "model_sha": null, "model_dtype" ("float32",
// "bfloat16"), "model_type": {"embedding": {"pooling"}} (or, for an encoder
// with a classification head, {"reranker" | "classifier": {"id2label",
// "label2id"}}: one label or several), "max_concurrent_requests",
// "max_input_length" (ModelInfo's max_input_tokens), "max_batch_tokens", "max_batch_requests",
// "max_client_batch_size", "auto_truncate": false, "tokenization_workers",
// "version", "sha": null, "docker_label": null}.
nlohmann::json TeiInfo(const v1::ModelInfo& encoder, const ServiceInfo& service);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_HF_INFO_H_
