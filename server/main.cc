// attnserve: flags -> Server::Create -> wait for SIGTERM/SIGINT -> drain -> exit 0.
//
//   attnserve [--flags...]              serve
//   attnserve healthcheck [--flags...]  probe a running server's /healthz (exit 0 = healthy)
//
// Flags are written with dashes (--grpc-port) or underscores (--grpc_port).
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/flags/reflection.h"
#include "absl/flags/usage.h"
#include "absl/flags/usage_config.h"
#include "absl/log/initialize.h"
#include "absl/log/globals.h"
#include "absl/log/log.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "absl/time/time.h"
#include "server/health_probe.h"
#include "server/server.h"
#include "server/version.h"

ABSL_FLAG(int, grpc_port, 50051, "gRPC port (attnserve.v1.Inference, grpc.health.v1.Health, reflection). 0 = a free port.");
ABSL_FLAG(int, http_port, 8080, "HTTP port (/healthz, /readyz, /metrics, JSON API). 0 = a free port.");
ABSL_FLAG(std::string, listen_address, "0.0.0.0", "Address both ports bind to.");
ABSL_FLAG(std::string, encoder_model, "", "Encoder model directory (Hugging Face layout: config.json, model.safetensors, tokenizer.json). Empty = no encoder.");
ABSL_FLAG(std::string, decoder_model, "", "Decoder model: a Hugging Face directory or a .gguf file. Empty = no decoder.");
ABSL_FLAG(int, threads, 0, "Engine compute threads (OpenMP/oneDNN). 0 = OMP_NUM_THREADS if set, else the CPUs this process may use: its CPU affinity, capped by a cgroup CPU quota (a container's CPU limit), rounded down.");
ABSL_FLAG(int64_t, kv_cache_bytes, int64_t{1} << 30, "Bytes of the KV cache block pool.");
ABSL_FLAG(int, max_queue, 256, "Requests that may wait in the queue; beyond it requests get RESOURCE_EXHAUSTED (HTTP 429).");
ABSL_FLAG(absl::Duration, drain_timeout, absl::Seconds(30), "On SIGTERM, how long in-flight requests may take to finish, e.g. 30s.");
ABSL_FLAG(int, http_threads, 0, "HTTP worker threads: one per HTTP request served at once, streams included; 4 are kept for probes and metrics. 0 = max_running_sequences + max_queue + 4 (at most 1024).");
ABSL_FLAG(int64_t, http_max_body_bytes, 8 << 20, "Largest accepted HTTP request body; larger gets 413.");
ABSL_FLAG(std::string, api_key, "", "If set, every inference call (HTTP /v1/..., gRPC attnserve.v1.Inference) needs 'Authorization: Bearer <key>'; probes and /metrics stay open. The ATTNSERVE_API_KEY environment variable is used when this flag is empty (it keeps the key out of ps).");
ABSL_FLAG(bool, log_requests, true, "Log one line per finished Encode/Generate (id, status, timings, token counts; never the text).");
ABSL_FLAG(std::string, weight_dtype, "f32", "Weight storage: f32, bf16 (half the memory) or q8_0 (llama.cpp's Q8_0 blocks, quantised at load as llama.cpp quantises: 1.125 bytes a weight; a Q8_0 GGUF's blocks as written; encoders keep their embedding tables f32). Compute stays f32.");
ABSL_FLAG(std::string, matmul_precision, "f32",
          "f32, or bf16: the projections' products over 16+ rows (encoder batches, prefill chunks, "
          "decode batches of 16+ sequences) may round activations and weights to bf16 with f32 "
          "accumulation, which runs them on AMX / AVX512-BF16 where the CPU has them (2-3x faster "
          "there; embeddings agree with f32 to cosine >= 0.999). Works with either --weight-dtype. "
          "Smaller products and attention stay f32.");
ABSL_FLAG(std::string, kv_cache_dtype, "f32", "KV cache storage: f32 or bf16 (bf16 halves KV memory).");
ABSL_FLAG(std::string, chat_template, "", "Chat template for chat prompts (/v1/chat/completions, Generate's chat): chatml, llama2, llama3, llama3.1, zephyr, gemma, gemma3, phi3, mistral, qwen2, qwen2.5, qwen3, llama3.2, phi3.5, phi4-mini, phi4 or granite3. Empty = the model's own template when it is one of those, exactly; else chat requests are refused.");
ABSL_FLAG(std::string, tool_call_parser, "", "How /v1/chat/completions reads tool calls out of a free answer, for tool_choice \"auto\" (OpenAI's default once tools are given): llama3_json (vLLM's parser of that name: an answer that is {\"name\": ..., \"parameters\": ...}, several joined by \"; \") or hermes (vLLM's: <tool_call>{\"name\": ..., \"arguments\": ...}</tool_call> blocks after optional text; Qwen2.5, Hermes-2-Pro), with a chat template that shows tools (llama3.1, llama3.2, qwen2.5, qwen3). Empty = \"auto\" is refused; \"required\" and named tool choices work without it.");
ABSL_FLAG(std::string, reasoning_parser, "", "How /v1/chat/completions sets a reasoning model's thinking apart, as vLLM's parser of that name: deepseek_r1 (DeepSeek-R1 and its distills, QwQ: reasoning up to </think>) or qwen3 (the Qwen3 family: the same, unless enable_thinking false closed the thinking in the prompt); the message's \"reasoning\" (and \"reasoning_content\") then holds it and \"content\" the rest. Empty = the answer is all content. With a parser, a chat's format (response_format, guided_json / guided_choice / guided_regex, tool calls) holds what follows the thinking (from the token after </think>), as vLLM's structured outputs do with a reasoning parser.");
ABSL_FLAG(int32_t, thinking_token_budget, -1, "With --reasoning-parser: the thinking budget of chat requests that send none (their thinking_token_budget, vLLM's; Anthropic's thinking.budget_tokens): once an answer has this many tokens without </think>, </think> is written and the answer follows (llama.cpp's --reasoning-budget, as a budget). -1 = none.");
ABSL_FLAG(bool, structured_outputs_in_reasoning, false, "With --reasoning-parser: a chat's format holds the whole answer, the thinking too, from its first token (vLLM's structured outputs' enable_in_reasoning). False = the model thinks freely first.");
ABSL_FLAG(int, decoder_context_length, 0, "Decoder context in tokens; 0 = the model's declared context. Rope models may run longer than declared (stories260K's GGUF declares 128, it was trained with 512), as llama.cpp's -c does.");
ABSL_FLAG(int, kv_block_size, 16, "Token positions per KV cache block.");
ABSL_FLAG(int, encode_max_batch_size, 32, "Encode: inputs per batch.");
ABSL_FLAG(int64_t, encode_max_batch_tokens, 8192, "Encode: padded tokens per batch (batch size x longest input).");
ABSL_FLAG(absl::Duration, encode_max_wait, absl::Milliseconds(2), "Encode: how long a lone input waits for others to batch with.");
ABSL_FLAG(int, encode_max_inputs_per_request, 1024, "Encode: inputs one request may carry.");
ABSL_FLAG(int, max_step_tokens, 512, "Generate: tokens per engine step (decode tokens + prompt chunks).");
ABSL_FLAG(int, max_running_sequences, 64, "Generate: sequences holding KV cache blocks at once.");
ABSL_FLAG(int, max_new_tokens_limit, 4096, "Generate: the largest max_new_tokens a request may ask for.");
// healthcheck mode only:
ABSL_FLAG(std::string, probe_host, "127.0.0.1", "healthcheck: host to probe.");
ABSL_FLAG(std::string, probe_path, "/healthz", "healthcheck: HTTP path to probe (/healthz or /readyz).");
ABSL_FLAG(absl::Duration, probe_timeout, absl::Seconds(3), "healthcheck: time limit.");

namespace {

// Rewrites --foo-bar[=v] to --foo_bar[=v] and refuses flags absl does not
// know, naming them as the user wrote them.
bool NormalizeFlags(int argc, char** argv, std::vector<std::string>* storage) {
  storage->clear();
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (i > 0 && arg.rfind("--", 0) == 0 && arg.size() > 2) {
      const size_t eq = arg.find('=');
      std::string name = arg.substr(2, eq == std::string::npos ? std::string::npos : eq - 2);
      const std::string original = name;
      name = absl::StrReplaceAll(name, {{"-", "_"}});
      const bool builtin = name == "help" || name == "helpfull" || name == "version" || name == "helpshort" ||
                           name == "flagfile" || name == "fromenv" || name == "tryfromenv" ||
                           name == "undefok" || name == "helpon" || name == "helpmatch" ||
                           name == "only_check_args" || name == "helppackage";
      std::string base = name;
      if (base.rfind("no", 0) == 0 && absl::FindCommandLineFlag(base) == nullptr) base = base.substr(2);
      if (!builtin && absl::FindCommandLineFlag(base) == nullptr) {
        std::cerr << "attnserve: unknown flag '--" << original << "' (see --help)\n";
        return false;
      }
      arg = "--" + name + (eq == std::string::npos ? "" : arg.substr(eq));
    }
    storage->push_back(arg);
  }
  return true;
}

attnserve::ServerOptions OptionsFromFlags() {
  attnserve::ServerOptions o;
  o.network.grpc_port = absl::GetFlag(FLAGS_grpc_port);
  o.network.http_port = absl::GetFlag(FLAGS_http_port);
  o.network.listen_address = absl::GetFlag(FLAGS_listen_address);
  o.network.http_threads = absl::GetFlag(FLAGS_http_threads);
  o.network.http_max_body_bytes = absl::GetFlag(FLAGS_http_max_body_bytes);
  o.logging.log_requests = absl::GetFlag(FLAGS_log_requests);
  o.auth.api_key = absl::GetFlag(FLAGS_api_key);
  if (o.auth.api_key.empty()) {
    if (const char* env = std::getenv("ATTNSERVE_API_KEY"); env != nullptr) o.auth.api_key = env;
  }
  o.models.encoder_model = absl::GetFlag(FLAGS_encoder_model);
  o.models.decoder_model = absl::GetFlag(FLAGS_decoder_model);
  o.engine.threads = absl::GetFlag(FLAGS_threads);
  o.engine.kv_cache_bytes = absl::GetFlag(FLAGS_kv_cache_bytes);
  o.queue.max_queue = absl::GetFlag(FLAGS_max_queue);
  o.queue.drain_timeout = absl::GetFlag(FLAGS_drain_timeout);
  o.models.weight_dtype = absl::GetFlag(FLAGS_weight_dtype);
  o.models.matmul_precision = absl::GetFlag(FLAGS_matmul_precision);
  o.models.kv_cache_dtype = absl::GetFlag(FLAGS_kv_cache_dtype);
  o.models.decoder_context_length = absl::GetFlag(FLAGS_decoder_context_length);
  o.models.chat_template = absl::GetFlag(FLAGS_chat_template);
  o.models.tool_call_parser = absl::GetFlag(FLAGS_tool_call_parser);
  o.models.reasoning_parser = absl::GetFlag(FLAGS_reasoning_parser);
  o.models.structured_outputs_in_reasoning = absl::GetFlag(FLAGS_structured_outputs_in_reasoning);
  o.models.thinking_token_budget = absl::GetFlag(FLAGS_thinking_token_budget);
  o.batching.kv_block_size = absl::GetFlag(FLAGS_kv_block_size);
  o.batching.encode_max_batch_size = absl::GetFlag(FLAGS_encode_max_batch_size);
  o.batching.encode_max_batch_tokens = absl::GetFlag(FLAGS_encode_max_batch_tokens);
  o.batching.encode_max_wait = absl::GetFlag(FLAGS_encode_max_wait);
  o.batching.encode_max_inputs_per_request = absl::GetFlag(FLAGS_encode_max_inputs_per_request);
  o.batching.max_step_tokens = absl::GetFlag(FLAGS_max_step_tokens);
  o.batching.max_running_sequences = absl::GetFlag(FLAGS_max_running_sequences);
  o.batching.max_new_tokens_limit = absl::GetFlag(FLAGS_max_new_tokens_limit);
  return o;
}

int RunHealthcheck() {
  const absl::Status status =
      attnserve::ProbeHttp(absl::GetFlag(FLAGS_probe_host), absl::GetFlag(FLAGS_http_port),
                           absl::GetFlag(FLAGS_probe_path), absl::GetFlag(FLAGS_probe_timeout));
  if (!status.ok()) {
    std::cerr << "attnserve healthcheck: unhealthy: " << status.message() << "\n";
    return 1;
  }
  std::cout << "attnserve healthcheck: healthy\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::SetProgramUsageMessage(
      "attnserve: transformer inference service (gRPC + HTTP/JSON).\n"
      "  attnserve [flags]              serve\n"
      "  attnserve healthcheck [flags]  probe a running server (--http-port, --probe-path)");
  absl::FlagsUsageConfig usage;
  // --help lists the flags defined in this file (all of attnserve's own).
  usage.contains_help_flags = [](absl::string_view file) { return absl::EndsWith(file, "server/main.cc"); };
  usage.contains_helpshort_flags = usage.contains_help_flags;
  usage.version_string = [] { return std::string("attnserve ") + attnserve::kVersion + "\n"; };
  absl::SetFlagsUsageConfig(usage);

  bool healthcheck = false;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (i == 1 && std::strcmp(argv[i], "healthcheck") == 0) {
      healthcheck = true;
      continue;
    }
    args.push_back(argv[i]);
  }
  std::vector<std::string> normalized;
  if (!NormalizeFlags(static_cast<int>(args.size()), args.data(), &normalized)) return 2;
  std::vector<char*> argv2;
  for (std::string& s : normalized) argv2.push_back(s.data());
  std::vector<char*> positional = absl::ParseCommandLine(static_cast<int>(argv2.size()), argv2.data());
  if (positional.size() > 1) {
    std::cerr << "attnserve: unexpected argument '" << positional[1] << "' (see --help)\n";
    return 2;
  }
  if (healthcheck) return RunHealthcheck();

  absl::InitializeLog();
  // Containers collect stderr: every log line goes there.
  absl::SetStderrThreshold(absl::LogSeverityAtLeast::kInfo);
  // Block the termination signals in every thread (they inherit the mask) and
  // take them synchronously below, so no handler runs in signal context.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGTERM);
  sigaddset(&signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  absl::StatusOr<std::unique_ptr<attnserve::Server>> server = attnserve::Server::Create(OptionsFromFlags());
  if (!server.ok()) {
    std::cerr << "attnserve: failed to start: " << server.status().message() << "\n";
    return 1;
  }
  int sig = 0;
  sigwait(&signals, &sig);
  LOG(INFO) << "received " << (sig == SIGTERM ? "SIGTERM" : "SIGINT") << "; draining";
  (*server)->Drain();
  server->reset();
  return 0;
}
