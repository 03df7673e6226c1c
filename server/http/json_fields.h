// Reading fields of client JSON bodies for the compatibility surfaces
// (OpenAI's, Hugging Face TGI's and TEI's), whose shapes are not proto
// messages: each helper's error is INVALID_ARGUMENT naming the field and what
// it must be. A field that is null counts as absent, as those clients send
// null for "not given".
#ifndef ATTNSERVE_SERVER_HTTP_JSON_FIELDS_H_
#define ATTNSERVE_SERVER_HTTP_JSON_FIELDS_H_

#include <cstdint>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "attnserve/v1/inference.pb.h"
#include "nlohmann/json.hpp"

namespace attnserve {

// The field, or nullptr when absent or null.
const nlohmann::json* Field(const nlohmann::json& object, const char* name);

// "<field>: must be <expected>, got <type>".
absl::Status TypeError(absl::string_view field, absl::string_view expected, const nlohmann::json& got);

// The same for bodies read in their written key order (ordered_json), where
// the order matters (a JSON schema's properties, a rewritten body).
const nlohmann::ordered_json* Field(const nlohmann::ordered_json& object, const char* name);
absl::Status TypeError(absl::string_view field, absl::string_view expected, const nlohmann::ordered_json& got);
// The string `name` of `object` (whose own name is `parent`): errors name
// "<parent>.<name>" ("required", "must be a string").
absl::StatusOr<std::string> RequiredString(const nlohmann::ordered_json& object, const char* name,
                                           absl::string_view parent);

// "<field>: not supported (<why>)": an option the client may send that this
// server cannot honour, refused rather than silently ignored.
absl::Status Unsupported(absl::string_view field, absl::string_view why);

// vLLM's "priority": only 0 (absent or null) is taken; another value is
// refused as vLLM refuses it without priority scheduling, since a request
// served first come, first served would not get what it asked for.
absl::Status RefuseNonZeroPriority(const nlohmann::json& body);

absl::StatusOr<int32_t> Int32Field(const nlohmann::json& value, absl::string_view field);
absl::StatusOr<float> FloatField(const nlohmann::json& value, absl::string_view field);
absl::StatusOr<bool> BoolField(const nlohmann::json& value, absl::string_view field);
absl::StatusOr<std::string> StringField(const nlohmann::json& value, absl::string_view field);

// An array of token ids; element i's error names "<field>[i]".
absl::StatusOr<v1::TokenIds> TokenIdsField(const nlohmann::json& array, absl::string_view field);

// Applies the optional `field` of `body` with `set` when present.
template <typename T, typename Parse, typename Set>
absl::Status Optional(const nlohmann::json& body, const char* field, Parse parse, Set set) {
  const nlohmann::json* value = Field(body, field);
  if (value == nullptr) return absl::OkStatus();
  absl::StatusOr<T> parsed = parse(*value, field);
  if (!parsed.ok()) return parsed.status();
  set(*parsed);
  return absl::OkStatus();
}

// Adds the inputs of an embedding request's `input` (named `field`): a
// string, an array of strings, one array of token ids, or an array of token
// id arrays; errors name "<field>[i]".
absl::Status AddEncodeInputs(const nlohmann::json& input, absl::string_view field, v1::EncodeRequest* request);
// OpenAI's and TEI's "dimensions" (an integer; its range against the model
// is checked with the rest of the Encode request).
absl::Status ReadEmbeddingDimensions(const nlohmann::json& object, v1::EncodeRequest* request);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_JSON_FIELDS_H_
