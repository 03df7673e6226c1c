#include "engine/formats/json_util.h"

#include <fstream>
#include <sstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace attnserve {

absl::StatusOr<nlohmann::json> ParseJson(absl::string_view text, absl::string_view where) {
  nlohmann::json j = nlohmann::json::parse(text.begin(), text.end(), /*cb=*/nullptr,
                                           /*allow_exceptions=*/false);
  if (j.is_discarded()) return absl::InvalidArgumentError(absl::StrCat(where, ": not valid JSON"));
  return j;
}

absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": read error"));
  return ParseJson(ss.str(), path);
}

namespace {
const nlohmann::json* Lookup(const nlohmann::json& obj, absl::string_view key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(std::string(key));
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}
absl::Status WrongType(absl::string_view where, absl::string_view key, absl::string_view want) {
  return absl::InvalidArgumentError(absl::StrCat(where, ": field \"", key, "\" must be ", want));
}
}  // namespace

absl::StatusOr<std::optional<int64_t>> JsonOptionalInt(const nlohmann::json& obj, absl::string_view key,
                                                       absl::string_view where) {
  const nlohmann::json* v = Lookup(obj, key);
  if (v == nullptr) return std::optional<int64_t>();
  if (v->is_number_unsigned()) {
    uint64_t u = v->get<uint64_t>();
    if (u > static_cast<uint64_t>(INT64_MAX)) return WrongType(where, key, "an integer in int64 range");
    return std::optional<int64_t>(static_cast<int64_t>(u));
  }
  if (!v->is_number_integer()) return WrongType(where, key, "an integer");
  return std::optional<int64_t>(v->get<int64_t>());
}

absl::StatusOr<std::optional<double>> JsonOptionalDouble(const nlohmann::json& obj, absl::string_view key,
                                                         absl::string_view where) {
  const nlohmann::json* v = Lookup(obj, key);
  if (v == nullptr) return std::optional<double>();
  if (!v->is_number()) return WrongType(where, key, "a number");
  return std::optional<double>(v->get<double>());
}

absl::StatusOr<std::optional<bool>> JsonOptionalBool(const nlohmann::json& obj, absl::string_view key,
                                                     absl::string_view where) {
  const nlohmann::json* v = Lookup(obj, key);
  if (v == nullptr) return std::optional<bool>();
  if (!v->is_boolean()) return WrongType(where, key, "a boolean");
  return std::optional<bool>(v->get<bool>());
}

absl::StatusOr<std::optional<std::string>> JsonOptionalString(const nlohmann::json& obj, absl::string_view key,
                                                              absl::string_view where) {
  const nlohmann::json* v = Lookup(obj, key);
  if (v == nullptr) return std::optional<std::string>();
  if (!v->is_string()) return WrongType(where, key, "a string");
  return std::optional<std::string>(v->get<std::string>());
}

absl::StatusOr<int64_t> JsonRequiredInt(const nlohmann::json& obj, absl::string_view key, absl::string_view where,
                                        int64_t min_value, int64_t max_value) {
  absl::StatusOr<std::optional<int64_t>> v = JsonOptionalInt(obj, key, where);
  if (!v.ok()) return v.status();
  if (!v->has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": missing required field \"", key, "\""));
  }
  int64_t x = **v;
  if (x < min_value || x > max_value) {
    return absl::InvalidArgumentError(absl::StrCat(where, ": field \"", key, "\" = ", x, " is outside [",
                                                   min_value, ", ", max_value, "]"));
  }
  return x;
}

}  // namespace attnserve
