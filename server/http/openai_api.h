// The OpenAI-compatible surface: /v1/embeddings, /v1/completions and
// /v1/models mapped onto attnserve.v1 EncodeRequest / GenerateRequest, and
// the answers mapped back into OpenAI's objects. Pure functions (no model,
// no network), tested on their own.
//
// Unknown fields are ignored here (OpenAI clients send options we have no use
// for); fields we cannot honour (best_of other than n, suffix, dimensions)
// are refused with a 400 naming them rather than silently ignored.
#ifndef ATTNSERVE_SERVER_HTTP_OPENAI_API_H_
#define ATTNSERVE_SERVER_HTTP_OPENAI_API_H_

#include <cstdint>
#include <string>
#include "absl/strings/string_view.h"
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "attnserve/v1/inference.pb.h"
#include "nlohmann/json.hpp"
#include "server/http/openai_tools.h"
#include "server/http/reasoning_splitter.h"

namespace attnserve {

// OpenAI's documented default for max_tokens on /v1/completions.
inline constexpr int kOpenAiDefaultMaxTokens = 16;

struct EmbeddingsCall {
  v1::EncodeRequest request;
  bool base64 = false;  // encoding_format "base64": little-endian float32 bytes
};

// {"input": str | [str] | [int] | [[int]], "model": str, "encoding_format":
// "float" | "base64", "user": str}.
absl::StatusOr<EmbeddingsCall> ParseEmbeddingsRequest(absl::string_view body);

// {"object":"list","data":[{"object":"embedding","index":i,"embedding":..}],
//  "model":..,"usage":{"prompt_tokens":..,"total_tokens":..}}.
nlohmann::json EmbeddingsResponse(const v1::EncodeResponse& response, const std::string& model, bool base64);

// Choices one /v1/completions request may ask for: prompts × n (each choice
// runs as a Generate request of its own).
inline constexpr size_t kMaxCompletionChoices = 256;

// How a completion's choices are written.
struct CompletionFormat {
  bool logprobs = false;  // "logprobs": n was given: return OpenAI's logprobs object
  // "echo": each choice's text (and logprobs) starts with its prompt; the
  // requests ask for prompt logprobs, which carry the prompt's tokens.
  bool echo = false;
  // echo with max_tokens 0 (score the prompt only, as vLLM allows): one
  // token is generated, because the prompt's scores come with the first
  // token, and dropped (DropGenerated).
  bool drop_generated = false;
  // A chat completion (/v1/chat/completions, openai_chat.h): OpenAI's chat
  // objects and logprobs.
  bool chat = false;
  // Chat: the answer is tool calls (openai_tools.h).
  ToolCallFormat tools{};
  // vLLM's "prompt_logprobs": k: each choice (chat: the response) carries
  // "prompt_logprobs", null for the first prompt token, then per token
  // {"<id>": {"logprob", "rank", "decoded_token"}} for it and the k most
  // likely tokens there. -1: not asked.
  int prompt_logprobs = -1;
  // vLLM's "return_token_ids": each choice carries "token_ids" (a stream:
  // each chunk's), and the prompt's "prompt_token_ids" (completions: in each
  // choice, on its first chunk when streamed; chat: at the top level, on
  // the role chunk when streamed).
  bool return_token_ids = false;
  // vLLM's "return_tokens_as_token_ids": logprobs name each token
  // "token_id:<id>" rather than by its text, which may not be valid UTF-8.
  bool tokens_as_ids = false;
  // Chat: --reasoning-parser, the answer's reasoning apart from its content
  // (reasoning_splitter.h; set by ApplyReasoningParser, openai_chat.h).
  ReasoningParser reasoning = ReasoningParser::kNone;
  // The prompt closed the thinking (qwen3 with enable_thinking false): the
  // answer is all content.
  bool thinking_off = false;
};

// OpenAI's bound on top_logprobs for chat (vLLM's on prompt_logprobs).
inline constexpr int kOpenAiMaxTopLogprobs = 20;

struct CompletionCall {
  // One request per choice, prompt-major as OpenAI numbers choices: choice k
  // is sample k % n of prompt k / n. All share the sampling options, except
  // that with a seed S sample j gets S + j, so the n samples of a prompt
  // differ and each can be reproduced alone.
  std::vector<v1::GenerateRequest> requests;
  int n = 1;
  bool stream = false;
  // stream_options.include_usage: every choice chunk has "usage": null and a
  // chunk with no choices and the summed usage ends the stream, as OpenAI.
  bool include_usage = false;
  // vLLM's stream_options.continuous_usage_stats (with include_usage, as
  // vLLM reads it): every choice chunk has that choice's usage so far
  // instead of null ({"prompt_tokens", "completion_tokens", "total_tokens"}).
  bool continuous_usage = false;
  CompletionFormat format;
  // vLLM's "request_id": the request's id when the client sent no usable
  // X-Request-Id header (the header wins, as vLLM has it); empty: none.
  std::string request_id;
  size_t prompts() const { return requests.size() / static_cast<size_t>(n); }
};

// Reads vLLM's "prompt_logprobs" (null, or 0..20 alternatives a position;
// not above 0 with "stream", as vLLM) into `call` and its shared sampling.
absl::Status ParsePromptLogprobs(const nlohmann::json& root, CompletionCall* call, v1::SamplingParams* sampling);

// The "prompt_logprobs" list of a choice whose first chunk carried the
// prompt's tokens (k alternatives a position).
nlohmann::json VllmPromptLogprobs(const v1::GenerateResponse& first, int k);

// {"prompt": str | [int] | [str] | [[int]] (a list: a batch, choices in
//  prompt order), "model", "max_tokens", "temperature", "top_p",
//  "stop": str | [str], "seed", "logprobs": int, "stream": bool, "n": int,
//  "stream_options": {"include_usage": bool}, "echo": bool, "frequency_penalty", "presence_penalty", "logit_bias":
//  {"<id>": bias}} plus the extensions "top_k", "min_p", "min_tokens", "repetition_penalty",
// "ignore_eos", "stop_token_ids", "include_stop_str_in_output" and
// "truncate_prompt_tokens" (as vLLM).
absl::StatusOr<CompletionCall> ParseCompletionRequest(absl::string_view body);

// What every object of one completion shares.
struct CompletionIdentity {
  std::string id;  // "cmpl-..."
  int64_t created = 0;  // Unix seconds
  std::string model;
};

// The whole completion object: choice k from per_choice[k]'s stream chunks
// (the last carries finish_reason and usage), usage summed over the choices
// (AddCompletionUsage). With format.echo, requests[k] is choice k's request
// (a text prompt is echoed as sent; token ids as their tokens' text).
nlohmann::json CompletionResponse(const std::vector<std::vector<v1::GenerateResponse>>& per_choice,
                                  const CompletionIdentity& id, const CompletionFormat& format,
                                  const std::vector<v1::GenerateRequest>& requests = {});

// Where a streamed choice chunk puts usage.
enum class ChunkUsage {
  kOnLast,  // the last chunk (finish_reason set) carries the request's usage:
            // a completion of one choice without include_usage
  kNone,    // no "usage" key: several choices, CompletionUsageChunk ends the stream
  kNull,    // "usage": null on every chunk (stream_options.include_usage; the
            // usage comes in CompletionUsageChunk)
};

// One streamed completion chunk of choice `index`; `text_offset` is the
// length of that choice's text streamed before it. With format.echo the
// chunk that carries the prompt's tokens starts with the prompt (`request`:
// as in CompletionResponse).
nlohmann::json CompletionChunk(const v1::GenerateResponse& chunk, const CompletionIdentity& id,
                               const CompletionFormat& format, int64_t text_offset, int index = 0,
                               ChunkUsage usage = ChunkUsage::kOnLast,
                               const v1::GenerateRequest* request = nullptr);

// With format.drop_generated, empties a chunk of its generated token (ids,
// text, logprobs; usage counts 0 generated tokens); else leaves it be.
void DropGenerated(const CompletionFormat& format, v1::GenerateResponse* chunk);

// The chunk that ends a stream of several choices or one asked for with
// stream_options.include_usage: no choices, the usage summed over them.
// `object`: "text_completion", or "chat.completion.chunk" for a chat.
nlohmann::json CompletionUsageChunk(const v1::GenerateUsage& total, const CompletionIdentity& id,
                                    const char* object = "text_completion");

// OpenAI's usage object ({"prompt_tokens", "completion_tokens",
// "total_tokens"}, plus the request's peak KV bytes).
nlohmann::json CompletionUsage(const v1::GenerateUsage& usage);

// vLLM's stop_reason: the stop string or stop token id that ended the
// choice; null for the end-of-sequence token, the length, or not ended.
nlohmann::json StopReason(const v1::GenerateResponse& chunk);

// The text of token i of a stream chunk, for logprobs objects. A chunk
// usually holds one token, and then its text is that token's text (so the
// tokens join to the answer's text); otherwise the token's text from its
// position's alternatives, when it is among them ("" if not).
std::string ChunkTokenText(const v1::GenerateResponse& chunk, int i);

// How logprobs name a token: its text, or "token_id:<id>" with
// CompletionFormat::tokens_as_ids.
std::string LogprobTokenName(const std::string& text, int32_t id, bool as_id);

// With format.return_token_ids, sets (*choice)["token_ids"] to the ids of
// `chunks` in order.
void AddTokenIds(const CompletionFormat& format, const std::vector<v1::GenerateResponse>& chunks,
                 nlohmann::json* choice);

// The prompt's token ids a choice's first chunk carries (return_token_ids).
nlohmann::json PromptTokenIds(const v1::GenerateResponse& first);

// What /v1/completions and /v1/chat/completions parse alike.
// "model" and "user" are strings when present.
absl::Status CheckOpenAiModelField(const nlohmann::json& body);
// n (checked against `prompts` × n ≤ kMaxCompletionChoices), best_of,
// stream, stream_options into `call`; max_tokens, temperature, top_p, stop,
// seed, the penalties, logit_bias and the vLLM extensions (top_k, min_p,
// min_tokens, repetition_penalty, ignore_eos, stop_token_ids,
// include_stop_str_in_output, truncate_prompt_tokens) into `shared`.
// `body` is the request's text: a JSON schema's properties keep its order.
absl::Status ParseSharedCompletionFields(const nlohmann::json& root, absl::string_view body, size_t prompts,
                                         CompletionCall* call, v1::GenerateRequest* shared);
// call->requests: one per (prompt, sample), prompt-major, each with the
// shared sampling; with a seed S, sample j of a prompt gets S + j.
void ExpandCompletionChoices(const std::vector<v1::GenerateRequest>& prompts, const v1::GenerateRequest& shared,
                             CompletionCall* call);

// Adds one choice's usage to a completion's total (peak KV bytes too: the
// choices run side by side).
void AddCompletionUsage(const v1::GenerateUsage& usage, v1::GenerateUsage* total);

// "stop" for EOS / stop string / stop token, "length" for the token or
// context limit.
const char* OpenAiFinishReason(v1::FinishReason reason);

// A model /v1/models lists.
struct ServedModel {
  std::string name;       // empty: not loaded, not listed
  int max_model_len = 0;  // context in tokens (vLLM's field); 0: left out
};

// {"object":"list","data":[{"id":name,"object":"model","owned_by":"attnserve",
// "max_model_len":..}]} for every model with a name.
nlohmann::json ModelsResponse(const std::vector<ServedModel>& models, int64_t created);

// The core names proto fields (sampling.max_new_tokens); an OpenAI client sent
// OpenAI fields (max_tokens). Adds the OpenAI name to an INVALID_ARGUMENT
// message that names a mapped field, so the error names what the client sent.
absl::Status WithOpenAiFieldNames(const absl::Status& status);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_OPENAI_API_H_
