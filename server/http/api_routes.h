// The API routes of the HTTP door: native JSON endpoints over the
// attnserve.v1 messages and the OpenAI-compatible ones.
//
//   POST /v1/encode            EncodeRequest JSON   -> EncodeResponse JSON
//   POST /v1/generate          GenerateRequest JSON -> one GenerateResponse JSON
//                              (all tokens and text, finish_reason, usage)
//   POST /v1/generate_stream   GenerateRequest JSON -> text/event-stream, one
//                              `data: {GenerateResponse}` per chunk; the last
//                              carries finish_reason and usage; a failure
//                              after the stream started is `event: error`
//   POST /v1/embeddings        OpenAI embeddings
//   POST /v1/completions       OpenAI completions ("stream": true: SSE chunks,
//                              then `data: [DONE]`)
//   POST /v1/chat/completions  OpenAI chat completions (SSE with "stream")
//   POST /v1/responses         OpenAI's Responses API (typed SSE events with
//                              "stream"; openai_responses.h)
//   POST /v1/messages          Anthropic's Messages API (its events with
//                              "stream", its error shape; anthropic_messages.h)
//   POST /v1/messages/count_tokens  {"input_tokens": n} of that prompt
//   GET  /v1/models            OpenAI model list
//   POST /v1/tokenize          TokenizeRequest JSON   -> TokenizeResponse JSON
//   POST /v1/detokenize        DetokenizeRequest JSON -> DetokenizeResponse JSON
//   GET  /v1/model_info        GetModelInfoResponse JSON (every loaded model)
//   GET  /info                 TGI's Info for the decoder, or TEI's when only
//                              an encoder is loaded (hf_info.h)
//   POST /tokenize, /detokenize  vLLM's (vllm_tokenize.h)
//   POST /generate             TGI's generate ("stream": true streams, as on
//                              TGI's compat route), errors in TGI's shape
//   POST /generate_stream      TGI's token stream (SSE, no [DONE])
//   POST /embed                TEI's embed: [[f32, ...], ...]
//   POST /embed_all            TEI's token states: [[[f32, ...]]]
//   POST /similarity           TEI's sentence similarity: [f32, ...]
//   POST /v1/score, /score     vLLM's score (cosine of encoder embeddings)
//   POST /v1/rerank, /rerank, /v2/rerank
//                              vLLM's rerank (Jina's and Cohere's shape)
//
// Handlers run on civetweb worker threads and block there until the core's
// callbacks (which only queue results and return) deliver the answer. A
// client that disconnects during a stream is noticed at the next write and
// the request is cancelled, which frees its KV blocks within one step.
// README.md in this folder documents the endpoints.
#ifndef ATTNSERVE_SERVER_HTTP_API_ROUTES_H_
#define ATTNSERVE_SERVER_HTTP_API_ROUTES_H_

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "server/core/inference_core.h"
#include "server/http/hf_info.h"
#include "server/http/http_server.h"
#include "server/metrics/metrics.h"

namespace attnserve {

struct GatewayOptions {
  // Retry-After (seconds) sent with 429 answers.
  int retry_after_seconds = 1;
  // Log a line for each request the gateway refuses itself (its JSON shape,
  // a bad deadline header); the core logs the ones it sees.
  bool log_requests = true;
  // Non-empty: every route here needs "Authorization: Bearer <api_key>"
  // (server/core/api_key.h); others answer 401.
  std::string api_key;
  // Inference calls (encode, generate, embeddings, completions) served at
  // once; past it a call gets 429 with Retry-After at once, so the HTTP
  // threads kept for probes and /metrics are never all held by streams.
  // 0 = no limit (tests).
  int max_inference_calls = 0;
  // --tool-call-parser: "" (tool_choice "auto" refused), "llama3_json" or
  // "hermes".
  std::string tool_call_parser;
  // --reasoning-parser: "" (the answer is all content), "deepseek_r1" or
  // "qwen3" (reasoning_splitter.h); /v1/chat/completions only.
  std::string reasoning_parser;
  // --structured-outputs-in-reasoning (ApplyReasoningParser's in_reasoning).
  bool structured_outputs_in_reasoning = false;
  // --thinking-token-budget (ApplyReasoningParser's default_budget).
  int thinking_token_budget = -1;
  // The limits GET /info reports (TGI's and TEI's Info).
  ServiceInfo info;
};

// What the gateway needs from the inference core. A seam so the routes can be
// tested against a fake without a model; ApiRoutes(InferenceCore*) fills it
// from the real core.
struct GatewayBackend {
  std::function<void(const v1::EncodeRequest&, std::shared_ptr<RequestControl>, EncodeDone)> encode;
  std::function<void(const v1::GenerateRequest&, std::shared_ptr<RequestControl>, GenerateSink)> generate;
  std::function<absl::StatusOr<v1::TokenizeResponse>(const v1::TokenizeRequest&)> tokenize;
  std::function<absl::StatusOr<v1::DetokenizeResponse>(const v1::DetokenizeRequest&)> detokenize;
  std::function<v1::GetModelInfoResponse(const v1::GetModelInfoRequest&)> model_info;
  std::string encoder_name;  // "" when no encoder is loaded
  // The encoder's classification labels (a cross-encoder has one); empty
  // for an embedding model.
  std::vector<std::string> encoder_labels;
  // The encoder is a SPLADE model (ModelInfo.pooling "splade").
  bool encoder_sparse = false;
  std::string decoder_name;  // "" when no decoder is loaded
  // The chat template shows tools and has tool turns: tools go into chat
  // prompts and tool messages are taken (openai_tools.h).
  bool chat_shows_tools = false;
  // Ids for requests whose client sent no usable X-Request-Id; null: the
  // gateway makes its own (tests).
  std::function<std::string()> new_request_id;
};

// The routes over `backend`. `metrics` may be null (tests); otherwise each
// request is counted in attnserve_requests_total{rpc="Encode"|"Generate"} and
// the gateway's own JSON-shape refusals in the rejections counter. Every
// Encode/Generate answer (success, error or stream) carries X-Request-Id: the
// client's own when usable (request_log.h), else a new one.
std::map<std::string, HttpHandler> ApiRoutes(GatewayBackend backend, ServerMetrics* metrics,
                                             const GatewayOptions& options);

// The routes over the real core (not owned; must outlive the HTTP server).
std::map<std::string, HttpHandler> ApiRoutes(InferenceCore* core, ServerMetrics* metrics,
                                             const GatewayOptions& options);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_API_ROUTES_H_
