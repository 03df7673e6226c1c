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
  int http_threads = 8;                    // civetweb worker threads
  int64_t http_max_body_bytes = 8 << 20;   // larger bodies get 413
};

struct ModelOptions {
  std::string encoder_model;  // HF directory; empty = no encoder
  std::string decoder_model;  // HF directory or .gguf; empty = no decoder
};

struct EngineOptions {
  int threads = 0;                           // 0 = all cores (OpenMP default)
  int64_t kv_cache_bytes = int64_t{1} << 30;  // KV block pool size
};

struct QueueOptions {
  int max_queue = 256;                         // queued requests before RESOURCE_EXHAUSTED
  absl::Duration drain_timeout = absl::Seconds(30);  // SIGTERM: in-flight work may finish this long
};

struct ServerOptions {
  NetworkOptions network;
  ModelOptions models;
  EngineOptions engine;
  QueueOptions queue;
};

// Checks values and paths; the message names the flag and the limit.
absl::Status ValidateOptions(const ServerOptions& options);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_OPTIONS_H_
