#include "server/http/json_fields.h"

#include <limits>
#include <string>

#include "absl/strings/str_cat.h"

namespace attnserve {

using nlohmann::json;

const json* Field(const json& object, const char* name) {
  auto it = object.find(name);
  if (it == object.end() || it->is_null()) return nullptr;
  return &*it;
}

absl::Status TypeError(absl::string_view field, absl::string_view expected, const json& got) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": must be ", expected, ", got ", got.type_name()));
}

const nlohmann::ordered_json* Field(const nlohmann::ordered_json& object, const char* name) {
  if (!object.is_object()) return nullptr;
  const auto it = object.find(name);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

absl::Status TypeError(absl::string_view field, absl::string_view expected, const nlohmann::ordered_json& got) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": must be ", expected, ", got ", got.type_name()));
}

absl::StatusOr<std::string> RequiredString(const nlohmann::ordered_json& object, const char* name,
                                           absl::string_view parent) {
  const nlohmann::ordered_json* v = Field(object, name);
  if (v == nullptr) return absl::InvalidArgumentError(absl::StrCat(parent, ".", name, ": required"));
  if (!v->is_string()) return TypeError(absl::StrCat(parent, ".", name), "a string", *v);
  return v->get<std::string>();
}

absl::Status Unsupported(absl::string_view field, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat(field, ": not supported (", why, ")"));
}

absl::Status RefuseNonZeroPriority(const nlohmann::json& body) {
  const nlohmann::json* p = Field(body, "priority");
  if (p == nullptr || (p->is_number_integer() && p->get<int64_t>() == 0)) return absl::OkStatus();
  return Unsupported("priority", "requests are served first come, first served");
}

absl::StatusOr<int32_t> Int32Field(const json& value, absl::string_view field) {
  if (!value.is_number_integer()) return TypeError(field, "an integer", value);
  if (value.is_number_unsigned()) {
    const uint64_t v = value.get<uint64_t>();
    if (v > static_cast<uint64_t>(std::numeric_limits<int32_t>::max())) {
      return absl::InvalidArgumentError(absl::StrCat(field, ": ", v, " is out of range for a 32-bit integer"));
    }
    return static_cast<int32_t>(v);
  }
  const int64_t v = value.get<int64_t>();
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(absl::StrCat(field, ": ", v, " is out of range for a 32-bit integer"));
  }
  return static_cast<int32_t>(v);
}

absl::StatusOr<float> FloatField(const json& value, absl::string_view field) {
  if (!value.is_number()) return TypeError(field, "a number", value);
  return value.get<float>();
}

absl::StatusOr<bool> BoolField(const json& value, absl::string_view field) {
  if (!value.is_boolean()) return TypeError(field, "a boolean", value);
  return value.get<bool>();
}

absl::StatusOr<std::string> StringField(const json& value, absl::string_view field) {
  if (!value.is_string()) return TypeError(field, "a string", value);
  return value.get<std::string>();
}

absl::StatusOr<v1::TokenIds> TokenIdsField(const json& array, absl::string_view field) {
  v1::TokenIds ids;
  for (size_t i = 0; i < array.size(); ++i) {
    absl::StatusOr<int32_t> id = Int32Field(array[i], absl::StrCat(field, "[", i, "]"));
    if (!id.ok()) return id.status();
    ids.add_ids(*id);
  }
  return ids;
}

absl::Status AddEncodeInputs(const json& input, absl::string_view field, v1::EncodeRequest* request) {
  if (input.is_string()) {
    request->add_inputs()->set_text(input.get<std::string>());
    return absl::OkStatus();
  }
  if (!input.is_array()) {
    return TypeError(field, "a string, an array of strings or an array of token id arrays", input);
  }
  if (!input.empty() && input[0].is_number()) {
    // One input given as token ids.
    absl::StatusOr<v1::TokenIds> ids = TokenIdsField(input, field);
    if (!ids.ok()) return ids.status();
    *request->add_inputs()->mutable_token_ids() = *ids;
    return absl::OkStatus();
  }
  for (size_t i = 0; i < input.size(); ++i) {
    const json& item = input[i];
    const std::string item_field = absl::StrCat(field, "[", i, "]");
    if (item.is_string()) {
      request->add_inputs()->set_text(item.get<std::string>());
    } else if (item.is_array()) {
      absl::StatusOr<v1::TokenIds> ids = TokenIdsField(item, item_field);
      if (!ids.ok()) return ids.status();
      *request->add_inputs()->mutable_token_ids() = *ids;
    } else {
      return TypeError(item_field, "a string or an array of token ids", item);
    }
  }
  return absl::OkStatus();
}

absl::Status ReadEmbeddingDimensions(const json& object, v1::EncodeRequest* request) {
  return Optional<int32_t>(object, "dimensions", Int32Field, [&](int32_t v) { request->set_dimensions(v); });
}

}  // namespace attnserve
