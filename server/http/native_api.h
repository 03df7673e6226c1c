// JSON <-> proto for the native endpoints (/v1/encode, /v1/generate,
// /v1/generate_stream, /v1/tokenize, /v1/detokenize). Bodies are the attnserve.v1 request messages in
// proto3 JSON; answers are the response messages. Pure functions, so they are
// tested without a model.
#ifndef ATTNSERVE_SERVER_HTTP_NATIVE_API_H_
#define ATTNSERVE_SERVER_HTTP_NATIVE_API_H_

#include "absl/strings/string_view.h"

#include "absl/status/statusor.h"
#include "attnserve/v1/inference.pb.h"

namespace attnserve {

absl::StatusOr<v1::EncodeRequest> ParseEncodeRequest(absl::string_view body);
absl::StatusOr<v1::GenerateRequest> ParseGenerateRequest(absl::string_view body);
absl::StatusOr<v1::TokenizeRequest> ParseTokenizeRequest(absl::string_view body);
absl::StatusOr<v1::DetokenizeRequest> ParseDetokenizeRequest(absl::string_view body);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_NATIVE_API_H_
