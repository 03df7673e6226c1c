#include "server/http/native_api.h"

#include "server/http/json_body.h"

namespace attnserve {

namespace {

// A request message from its proto3 JSON body.
template <typename Message>
absl::StatusOr<Message> ParseMessage(absl::string_view body) {
  Message message;
  if (absl::Status s = JsonToProto(body, &message); !s.ok()) return s;
  return message;
}

}  // namespace

absl::StatusOr<v1::EncodeRequest> ParseEncodeRequest(absl::string_view body) {
  return ParseMessage<v1::EncodeRequest>(body);
}
absl::StatusOr<v1::GenerateRequest> ParseGenerateRequest(absl::string_view body) {
  return ParseMessage<v1::GenerateRequest>(body);
}
absl::StatusOr<v1::TokenizeRequest> ParseTokenizeRequest(absl::string_view body) {
  return ParseMessage<v1::TokenizeRequest>(body);
}
absl::StatusOr<v1::DetokenizeRequest> ParseDetokenizeRequest(absl::string_view body) {
  return ParseMessage<v1::DetokenizeRequest>(body);
}

}  // namespace attnserve
