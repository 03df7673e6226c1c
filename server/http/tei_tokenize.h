// TEI's tokenizer routes, with the encoder's tokenizer (TEI serves an
// encoder):
//
//   POST /tokenize  {"inputs": str | [str], "add_special_tokens": bool
//                   (default true)} -> per input [{"id", "text", "special",
//                   "start", "stop"}]: text is the input's own bytes
//                   [start, stop) (the token string and null offsets for a
//                   special token)
//   POST /decode    {"ids": [id] | [[id]], "skip_special_tokens": bool
//                   (default true)} -> [text] per input
//
// /tokenize is also vLLM's route: a body with "inputs" (and no "prompt" or
// "messages") is TEI's (IsTeiTokenize).
#ifndef ATTNSERVE_SERVER_HTTP_TEI_TOKENIZE_H_
#define ATTNSERVE_SERVER_HTTP_TEI_TOKENIZE_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "attnserve/v1/inference.pb.h"
#include "nlohmann/json.hpp"

namespace attnserve {

bool IsTeiTokenize(const nlohmann::json& root);
// One request per input, each for the encoder.
absl::StatusOr<std::vector<v1::TokenizeRequest>> ParseTeiTokenizeJson(const nlohmann::json& root);
// INTERNAL when a response lacks a span per token or a span leaves its text.
absl::StatusOr<nlohmann::json> TeiTokenizeResponse(const std::vector<v1::TokenizeRequest>& requests,
                                                   const std::vector<v1::TokenizeResponse>& responses);

absl::StatusOr<std::vector<v1::DetokenizeRequest>> ParseTeiDecodeRequest(absl::string_view body);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_TEI_TOKENIZE_H_
