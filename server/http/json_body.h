// JSON request bodies for the HTTP gateway: shape errors (bad JSON, invalid
// UTF-8, wrong types, unknown fields) become INVALID_ARGUMENT naming the
// field path, e.g. "inputs[1].text". Everything past the JSON shape (limits,
// ranges, token ids) is InferenceCore's to validate, for both doors alike.
#ifndef ATTNSERVE_SERVER_HTTP_JSON_BODY_H_
#define ATTNSERVE_SERVER_HTTP_JSON_BODY_H_

#include <string>
#include "absl/strings/string_view.h"
#include "engine/tokenizers/unicode_util.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "google/protobuf/message.h"
#include "nlohmann/json.hpp"

namespace attnserve {

// Parses `body` as one JSON object. Errors name the byte offset and the field
// being read when parsing stopped ("field 'inputs[0].text': string is not
// valid UTF-8").
absl::StatusOr<nlohmann::json> ParseJsonObject(absl::string_view body);

// The same, kept in the body's key order (ordered_json), for bodies that are
// rewritten into another API's (openai_responses.h, anthropic_messages.h),
// where a JSON schema's property order is the answer's.
absl::StatusOr<nlohmann::ordered_json> ParseOrderedJsonObject(absl::string_view body);

// Parses `body` into `message` with protobuf's JSON mapping (field names as in
// the proto or lowerCamelCase). Unknown fields are errors, so a typo is a 400
// naming it rather than a silently ignored option.
absl::Status JsonToProto(absl::string_view body, google::protobuf::Message* message);

// The proto3 JSON of `message` with the proto's own field names; primitive
// fields are printed even when zero so clients see a fixed shape (int64
// fields are JSON strings, as proto3 JSON specifies).
std::string ProtoToJson(const google::protobuf::Message& message);

// IsValidUtf8 (well-formed UTF-8) comes from the engine's Unicode helpers.

// `s` with every byte that is not part of well-formed UTF-8 written as
// "\xNN", so error messages quoting client input stay valid JSON strings.
std::string SanitizeUtf8(absl::string_view s);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_JSON_BODY_H_
