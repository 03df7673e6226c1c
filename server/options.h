// ServerOptions: everything the server is configured with, grouped by concern.
// Filled from flags in main.cc; tests build them directly.
#ifndef ATTNSERVE_SERVER_OPTIONS_H_
#define ATTNSERVE_SERVER_OPTIONS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/time/time.h"

namespace attnserve {

struct NetworkOptions {
  std::string listen_address = "0.0.0.0";  // both doors bind here
  int grpc_port = 50051;                   // 0 = pick a free port
  int http_port = 8080;                    // 0 = pick a free port
  // HTTP worker threads; 0 = enough for every request the core can hold
  // (HttpThreads below). Each HTTP request keeps one thread until it is
  // answered, streams included.
  int http_threads = 0;
  int64_t http_max_body_bytes = 8 << 20;   // larger bodies get 413
};

struct ModelOptions {
  std::string encoder_model;       // HF directory; empty = no encoder
  std::string decoder_model;       // HF directory or .gguf; empty = no decoder
  std::string weight_dtype = "f32";  // "f32", "bf16" or "q8_0" weight storage (compute is f32)
  std::string kv_cache_dtype = "f32";  // "f32" or "bf16" K/V storage
  // "f32" or "bf16": what the projections' large products may round to
  // (engine/ops/matmul_precision.h); bf16 runs them on AMX where the CPU has it.
  std::string matmul_precision = "f32";
  int decoder_context_length = 0;      // 0 = the model's declared context; rope models may go longer
  // A chat format name (engine/tokenizers/chat_template.h) for chat prompts;
  // empty = the model's own template when it is one attnserve reproduces.
  std::string chat_template;
  // "", "llama3_json" or "hermes": how tool_choice "auto" reads calls out of an
  // answer (server/http/openai_tools.h); needs a template that shows tools.
  std::string tool_call_parser;
  // "", "deepseek_r1" or "qwen3": how /v1/chat/completions sets a reasoning
  // model's <think> part apart (server/http/reasoning_splitter.h).
  std::string reasoning_parser;
  // With a reasoning parser: a chat's format (response_format, guided_*,
  // tool calls) holds the thinking too, from the first token (vLLM's
  // structured outputs' enable_in_reasoning); false: what follows it.
  bool structured_outputs_in_reasoning = false;
  // With a reasoning parser: the thinking_token_budget of chat requests that
  // send none (-1: none).
  int thinking_token_budget = -1;
};

struct EngineOptions {
  int threads = 0;                           // 0 = OMP_NUM_THREADS, else the CPU budget (cgroup_limits.h)
  int64_t kv_cache_bytes = int64_t{1} << 30;  // KV block pool size
};

struct QueueOptions {
  int max_queue = 256;                         // queued requests before RESOURCE_EXHAUSTED
  absl::Duration drain_timeout = absl::Seconds(30);  // SIGTERM: in-flight work may finish this long
};

struct BatchingOptions {
  int encode_max_batch_size = 32;          // inputs per encode batch
  int64_t encode_max_batch_tokens = 8192;  // padded tokens per encode batch
  absl::Duration encode_max_wait = absl::Milliseconds(2);  // a lone input waits this long for company
  int encode_max_inputs_per_request = 1024;  // more is INVALID_ARGUMENT
  int max_step_tokens = 512;               // tokens per generate step (decode + prefill chunks)
  int max_running_sequences = 64;          // generate sequences holding KV at once
  int max_new_tokens_limit = 4096;         // largest max_new_tokens a request may ask for
  int kv_block_size = 16;                  // token positions per KV block
};

struct AuthOptions {
  // Required as "Authorization: Bearer <key>" on every inference call; empty
  // = no check (server/core/api_key.h). Never logged.
  std::string api_key;
};

struct LoggingOptions {
  bool log_requests = true;  // one INFO line per finished Encode/Generate (server/core/request_log.h)
};

struct ServerOptions {
  NetworkOptions network;
  AuthOptions auth;
  LoggingOptions logging;
  ModelOptions models;
  EngineOptions engine;
  QueueOptions queue;
  BatchingOptions batching;
};

// Checks values and paths; the message names the flag and the limit.
absl::Status ValidateOptions(const ServerOptions& options);

// HTTP threads kept for requests that answer at once (probes, /metrics,
// /v1/models, tokenize): inference calls may hold at most
// HttpThreads() - kHttpReservedThreads threads, so a liveness probe or a
// Prometheus scrape never waits behind streams.
inline constexpr int kHttpReservedThreads = 4;
// The most HTTP threads the server starts (civetweb's and its own handler
// threads, one each per HTTP request served at once).
inline constexpr int kHttpMaxThreads = 1024;

// --http-threads, or when it is 0: max_running_sequences + max_queue +
// kHttpReservedThreads (every request the scheduler can run or queue, plus
// the reserve), at most kHttpMaxThreads.
int HttpThreads(const ServerOptions& options);

// How many inference calls (Encode, Generate and their OpenAI forms) the HTTP
// door serves at once: HttpThreads() - kHttpReservedThreads. Past it a call
// gets 429 at once.
int HttpMaxInferenceCalls(const ServerOptions& options);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_OPTIONS_H_
