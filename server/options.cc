#include "server/options.h"

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <system_error>

#include "absl/strings/str_cat.h"
#include "engine/tokenizers/chat_template.h"

namespace attnserve {
namespace {

absl::Status CheckPort(const char* flag, int port) {
  if (port < 0 || port > 65535) {
    return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", port, ": must be in [0, 65535]"));
  }
  return absl::OkStatus();
}

absl::Status CheckModelPath(const char* flag, const std::string& path) {
  if (path.empty()) return absl::OkStatus();
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return absl::NotFoundError(absl::StrCat("--", flag, ": path '", path, "' does not exist"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ValidateOptions(const ServerOptions& o) {
  if (absl::Status s = CheckPort("grpc-port", o.network.grpc_port); !s.ok()) return s;
  if (absl::Status s = CheckPort("http-port", o.network.http_port); !s.ok()) return s;
  if (o.network.grpc_port != 0 && o.network.grpc_port == o.network.http_port) {
    return absl::InvalidArgumentError(
        absl::StrCat("--grpc-port and --http-port are both ", o.network.grpc_port, "; they must differ"));
  }
  if (o.network.http_threads != 0 &&
      (o.network.http_threads <= kHttpReservedThreads || o.network.http_threads > kHttpMaxThreads)) {
    return absl::InvalidArgumentError(absl::StrCat("--http-threads=", o.network.http_threads, ": must be 0 (auto) or in [",
                                                   kHttpReservedThreads + 1, ", ", kHttpMaxThreads, "] (",
                                                   kHttpReservedThreads, " are kept for probes and metrics)"));
  }
  if (o.network.http_max_body_bytes < 1024) {
    return absl::InvalidArgumentError("--http-max-body-bytes: must be >= 1024");
  }
  if (o.engine.threads < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--threads=", o.engine.threads, ": must be >= 0 (0 = OMP_NUM_THREADS, else the CPUs this process may use)"));
  }
  if (o.engine.kv_cache_bytes <= 0) {
    return absl::InvalidArgumentError(absl::StrCat("--kv-cache-bytes=", o.engine.kv_cache_bytes, ": must be > 0"));
  }
  if (o.queue.max_queue < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--max-queue=", o.queue.max_queue, ": must be >= 1"));
  }
  if (o.queue.drain_timeout < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("--drain-timeout: must be >= 0");
  }
  const BatchingOptions& b = o.batching;
  if (b.encode_max_batch_size < 1) return absl::InvalidArgumentError("--encode-max-batch-size: must be >= 1");
  if (b.encode_max_batch_tokens < 1) return absl::InvalidArgumentError("--encode-max-batch-tokens: must be >= 1");
  if (b.encode_max_wait < absl::ZeroDuration()) return absl::InvalidArgumentError("--encode-max-wait: must be >= 0");
  if (b.encode_max_inputs_per_request < 1) {
    return absl::InvalidArgumentError("--encode-max-inputs-per-request: must be >= 1");
  }
  if (b.max_step_tokens < 1) return absl::InvalidArgumentError("--max-step-tokens: must be >= 1");
  if (b.max_running_sequences < 1) return absl::InvalidArgumentError("--max-running-sequences: must be >= 1");
  if (b.max_new_tokens_limit < 1) return absl::InvalidArgumentError("--max-new-tokens-limit: must be >= 1");
  if (b.kv_block_size < 1 || b.kv_block_size > 1024) {
    return absl::InvalidArgumentError("--kv-block-size: must be in [1, 1024]");
  }
  if (o.models.weight_dtype != "f32" && o.models.weight_dtype != "bf16" && o.models.weight_dtype != "q8_0") {
    return absl::InvalidArgumentError(
        absl::StrCat("--weight-dtype=", o.models.weight_dtype, ": must be f32, bf16 or q8_0"));
  }
  if (o.models.matmul_precision != "f32" && o.models.matmul_precision != "bf16") {
    return absl::InvalidArgumentError(
        absl::StrCat("--matmul-precision=", o.models.matmul_precision, ": must be f32 or bf16"));
  }
  if (o.models.kv_cache_dtype != "f32" && o.models.kv_cache_dtype != "bf16") {
    return absl::InvalidArgumentError(
        absl::StrCat("--kv-cache-dtype=", o.models.kv_cache_dtype, ": must be f32 or bf16"));
  }
  if (o.models.decoder_context_length < 0) {
    return absl::InvalidArgumentError("--decoder-context-length: must be >= 0 (0 = the model's own)");
  }
  if (!o.models.chat_template.empty()) {
    if (absl::StatusOr<ChatFormat> f = ChatFormatFromName(o.models.chat_template); !f.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("--chat-template=", o.models.chat_template, ": ",
                                                     "must be one of ", ChatFormatNames()));
    }
  }
  if (!o.models.tool_call_parser.empty() && o.models.tool_call_parser != "llama3_json" &&
      o.models.tool_call_parser != "hermes") {
    return absl::InvalidArgumentError(
        absl::StrCat("--tool-call-parser=", o.models.tool_call_parser, ": must be llama3_json, hermes or empty"));
  }
  if (!o.models.reasoning_parser.empty() && o.models.reasoning_parser != "deepseek_r1" &&
      o.models.reasoning_parser != "qwen3") {
    return absl::InvalidArgumentError(
        absl::StrCat("--reasoning-parser=", o.models.reasoning_parser, ": must be deepseek_r1, qwen3 or empty"));
  }
  if (o.models.structured_outputs_in_reasoning && o.models.reasoning_parser.empty()) {
    return absl::InvalidArgumentError(
        "--structured-outputs-in-reasoning: only with --reasoning-parser (without one nothing is thinking)");
  }
  if (o.models.thinking_token_budget < -1) {
    return absl::InvalidArgumentError(absl::StrCat("--thinking-token-budget=", o.models.thinking_token_budget,
                                                   ": must be >= 0, or -1 (none)"));
  }
  if (o.models.thinking_token_budget >= 0 && o.models.reasoning_parser.empty()) {
    return absl::InvalidArgumentError(
        "--thinking-token-budget: only with --reasoning-parser (which says where the thinking ends)");
  }
  if (absl::Status s = CheckModelPath("encoder-model", o.models.encoder_model); !s.ok()) return s;
  if (absl::Status s = CheckModelPath("decoder-model", o.models.decoder_model); !s.ok()) return s;
  return absl::OkStatus();
}

int HttpThreads(const ServerOptions& o) {
  if (o.network.http_threads != 0) return o.network.http_threads;
  const int64_t wanted =
      int64_t{o.batching.max_running_sequences} + int64_t{o.queue.max_queue} + kHttpReservedThreads;
  return static_cast<int>(std::min<int64_t>(wanted, kHttpMaxThreads));
}

int HttpMaxInferenceCalls(const ServerOptions& o) { return HttpThreads(o) - kHttpReservedThreads; }

}  // namespace attnserve
