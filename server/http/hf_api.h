// The Hugging Face-compatible surface, for clients written for TGI and TEI
// (huggingface_hub's InferenceClient, the text-generation client, LangChain's
// HuggingFaceEndpoint): TGI's POST /generate and /generate_stream and TEI's
// POST /embed, mapped onto attnserve.v1 GenerateRequest / EncodeRequest and
// back into their JSON. Pure functions (no model, no network), tested on
// their own. Errors use TGI's and TEI's shape, {"error": message,
// "error_type": ...}, which those clients read.
//
// Where TGI differs from attnserve's own semantics the TGI meaning is kept:
// greedy unless do_sample or a sampling option is given; stop sequences stay
// in the text; max_new_tokens defaults to 100. Options that cannot be
// honoured (TGI's frequency_penalty formula, watermark, grammar,
// adapters, best_of > 1) are refused naming them, never ignored.
#ifndef ATTNSERVE_SERVER_HTTP_HF_API_H_
#define ATTNSERVE_SERVER_HTTP_HF_API_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "attnserve/v1/inference.pb.h"
#include "nlohmann/json.hpp"

namespace attnserve {

// TGI's default max_new_tokens when the client sends none (huggingface_hub
// documents 100).
inline constexpr int kTgiDefaultMaxNewTokens = 100;

struct TgiCall {
  v1::GenerateRequest request;
  std::string inputs;              // the prompt as sent (return_full_text)
  bool stream = false;             // "stream": true (what InferenceClient sends)
  bool details = false;            // parameters.details
  bool decoder_input_details = false;
  bool return_full_text = false;
  int top_n_tokens = 0;
  std::optional<uint64_t> seed;    // reported in details: set when sampling
};

// {"inputs": str, "parameters": {...TGI's GenerateParameters}, "stream":
// bool}; `stream_route` (/generate_stream) streams whatever "stream" says.
// `random_seed` is the seed a sampled request without one gets (TGI reports
// the seed it drew).
absl::StatusOr<TgiCall> ParseTgiGenerateRequest(absl::string_view body, uint64_t random_seed,
                                                bool stream_route = false);

// TGI's HTTP status for a status: 422 for invalid input, 424 for a failed
// generation, else the gateway's (429 overloaded, 503 draining, 504 deadline).
int TgiHttpStatus(absl::StatusCode code);

// TGI's finish_reason: "length", "eos_token" or "stop_sequence".
const char* TgiFinishReason(v1::FinishReason reason);

// {"generated_text": ..., "details": {...}} (details only when asked) from
// one request's stream messages.
nlohmann::json TgiGenerateResponse(const std::vector<v1::GenerateResponse>& chunks, const TgiCall& call);

// The stream events (TGI's StreamResponse) of one message's tokens;
// `tokens_before` counts the tokens sent before it and `text_before` their
// text. The message that ends the stream gives its last token's event the
// whole generated_text and the details.
std::vector<nlohmann::json> TgiStreamEvents(const v1::GenerateResponse& chunk, const TgiCall& call,
                                            int tokens_before, const std::string& text_before);

// {"error": message, "error_type": "validation" | "overloaded" |
// "generation" | ...} as TGI writes it.
nlohmann::json TgiError(const absl::Status& status);

// TEI's {"inputs": str | [str] | [int] | [[int]], "normalize": bool (default
// true), "truncate": bool (default false: an input over the model's length
// is refused), "truncation_direction": "right", "prompt_name": null,
// "dimensions": null}.
absl::StatusOr<v1::EncodeRequest> ParseTeiEmbedRequest(absl::string_view body);

// [[f32, ...], ...]: one embedding per input, in order.
nlohmann::json TeiEmbedResponse(const v1::EncodeResponse& response);

// TEI's /embed_all: {"inputs", "truncate", "truncation_direction",
// "prompt_name"}, answered with every token's last hidden state, special
// tokens included and not normalised (POOLING_NONE).
absl::StatusOr<v1::EncodeRequest> ParseTeiEmbedAllRequest(absl::string_view body);

// [[[f32, ...] per token] per input].
nlohmann::json TeiEmbedAllResponse(const v1::EncodeResponse& response);

// TEI's /embed_sparse: {"inputs", "truncate", "truncation_direction",
// "prompt_name"}, pooled by SPLADE (POOLING_SPLADE).
absl::StatusOr<v1::EncodeRequest> ParseTeiEmbedSparseRequest(absl::string_view body);

// [[{"index": token id, "value": weight}, ...] per input]: the non-zero
// entries, ids ascending.
nlohmann::json TeiEmbedSparseResponse(const v1::EncodeResponse& response);

// TEI's "truncate" (default false: an input over the model's length is
// refused), "truncation_direction" ("right"; "left" only without truncation)
// and "prompt_name" (refused: no prompts are configured) of `object` onto
// `request`.
absl::Status ReadTeiTruncation(const nlohmann::json& object, v1::EncodeRequest* request);

// {"error": message, "error_type": "Validation" | "Overloaded" | ...} as TEI
// writes it.
nlohmann::json TeiError(const absl::Status& status);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_HF_API_H_
