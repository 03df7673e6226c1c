// vLLM's /tokenize and /detokenize, for clients written for vLLM's server
// (token counting before a call, prompt budgeting against max_model_len).
// Pure functions on attnserve.v1's Tokenize / Detokenize messages.
//
//   POST /tokenize {"prompt": str, "add_special_tokens": bool = true,
//                   "return_token_strs": bool = false, "model"}
//            or    {"messages": [...], "add_generation_prompt": bool = true,
//                   "continue_final_message": bool = false, "tools": [...],
//                   "return_token_strs", "model"}
//     -> {"count", "max_model_len", "tokens": [ids], "token_strs": [...] | null}
//   POST /detokenize {"tokens": [ids], "model"} -> {"prompt": str}
//
// Messages are read by the chat completions parser (openai_chat.h), so a
// conversation counts exactly the tokens /v1/chat/completions would give
// its prompt, tools shown included. As vLLM, the model served is the
// decoder, or the encoder where no decoder is loaded; detokenizing keeps
// special tokens (transformers' decode, which vLLM calls, keeps them).
#ifndef ATTNSERVE_SERVER_HTTP_VLLM_TOKENIZE_H_
#define ATTNSERVE_SERVER_HTTP_VLLM_TOKENIZE_H_

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "attnserve/v1/inference.pb.h"
#include "nlohmann/json.hpp"
#include "server/http/openai_tools.h"

namespace attnserve {

struct VllmTokenizeCall {
  v1::TokenizeRequest request;
  bool return_token_strs = false;
};

// `model`: the model that tokenizes (the decoder, else the encoder);
// `tools`: what chat's parser needs to read messages with tools.
absl::StatusOr<VllmTokenizeCall> ParseVllmTokenizeRequest(absl::string_view body, v1::ModelKind model,
                                                          const ToolSupport& tools);

nlohmann::json VllmTokenizeResponse(const VllmTokenizeCall& call, const v1::TokenizeResponse& tokens,
                                    int max_model_len);

absl::StatusOr<v1::DetokenizeRequest> ParseVllmDetokenizeRequest(absl::string_view body, v1::ModelKind model);

nlohmann::json VllmDetokenizeResponse(const v1::DetokenizeResponse& text);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_VLLM_TOKENIZE_H_
