// The OpenAI-compatible surface: /v1/embeddings, /v1/completions and
// /v1/models mapped onto attnserve.v1 EncodeRequest / GenerateRequest, and
// the answers mapped back into OpenAI's objects. Pure functions (no model,
// no network), tested on their own.
//
// Unknown fields are ignored here (OpenAI clients send options we have no use
// for); fields we cannot honour (n > 1, echo, best_of > 1, suffix, penalties,
// logit_bias, dimensions) are refused with a 400 naming them rather than
// silently ignored.
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

// Prompts one /v1/completions request may carry (a batch runs as that many
// Generate requests).
inline constexpr size_t kMaxCompletionPrompts = 256;

struct CompletionCall {
  v1::GenerateRequest request;            // the (first) prompt, with the sampling
  std::vector<v1::GenerateRequest> more;  // a batch's other prompts, same sampling
  bool stream = false;
  bool logprobs = false;  // "logprobs": n was given: return OpenAI's logprobs object
};

// {"prompt": str | [int] | [str] | [[int]] (a list: one choice per prompt, in
//  order; not with "stream"), "model", "max_tokens",
//  "temperature", "top_p", "stop": str | [str], "seed", "logprobs": int,
//  "stream": bool, "n": 1, "echo": false} plus the extensions "top_k",
// "repetition_penalty", "ignore_eos" and "stop_token_ids" (as vLLM).
absl::StatusOr<CompletionCall> ParseCompletionRequest(absl::string_view body);

// What every object of one completion shares.
struct CompletionIdentity {
  std::string id;  // "cmpl-..."
  int64_t created = 0;  // Unix seconds
  std::string model;
};

// The whole completion object from the stream chunks of one request, in order
// (the last one carries finish_reason and usage).
nlohmann::json CompletionResponse(const std::vector<v1::GenerateResponse>& chunks, const CompletionIdentity& id,
                                  bool logprobs);
// A batch: choice i from prompt i's chunks; usage summed over the prompts
// (peak_kv_cache_bytes too: the prompts run side by side).
nlohmann::json CompletionResponse(const std::vector<std::vector<v1::GenerateResponse>>& per_prompt,
                                  const CompletionIdentity& id, bool logprobs);

// One streamed completion chunk; `text_offset` is the length of the text
// streamed before it. The last chunk (finish_reason set) also carries usage.
nlohmann::json CompletionChunk(const v1::GenerateResponse& chunk, const CompletionIdentity& id, bool logprobs,
                               int64_t text_offset);

// "stop" for EOS / stop string / stop token, "length" for the token or
// context limit.
const char* OpenAiFinishReason(v1::FinishReason reason);

// {"object":"list","data":[{"id":name,"object":"model","owned_by":"attnserve",..}]}
// for every non-empty name.
nlohmann::json ModelsResponse(const std::vector<std::string>& names, int64_t created);

// The core names proto fields (sampling.max_new_tokens); an OpenAI client sent
// OpenAI fields (max_tokens). Adds the OpenAI name to an INVALID_ARGUMENT
// message that names a mapped field, so the error names what the client sent.
absl::Status WithOpenAiFieldNames(const absl::Status& status);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_OPENAI_API_H_
