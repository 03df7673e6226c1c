// Small helpers for reading JSON configuration files with errors that name the
// file, the field and the reason. nlohmann::json is used without exceptions:
// every accessor checks the type first.
#ifndef ATTNSERVE_ENGINE_FORMATS_JSON_UTIL_H_
#define ATTNSERVE_ENGINE_FORMATS_JSON_UTIL_H_

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace attnserve {

// Reads and parses a JSON file. NOT_FOUND if it does not exist,
// INVALID_ARGUMENT (with the path) if it is not valid JSON.
absl::StatusOr<nlohmann::json> ReadJsonFile(const std::string& path);
// Parses JSON text; `where` names the source in errors.
absl::StatusOr<nlohmann::json> ParseJson(absl::string_view text, absl::string_view where);

// Typed optional fields of a JSON object. A missing key or a JSON null gives
// nullopt; a present key of the wrong type is INVALID_ARGUMENT naming
// `where` and the key.
absl::StatusOr<std::optional<int64_t>> JsonOptionalInt(const nlohmann::json& obj, absl::string_view key,
                                                       absl::string_view where);
absl::StatusOr<std::optional<double>> JsonOptionalDouble(const nlohmann::json& obj, absl::string_view key,
                                                         absl::string_view where);
absl::StatusOr<std::optional<bool>> JsonOptionalBool(const nlohmann::json& obj, absl::string_view key,
                                                     absl::string_view where);
absl::StatusOr<std::optional<std::string>> JsonOptionalString(const nlohmann::json& obj, absl::string_view key,
                                                              absl::string_view where);
// Required integer within [min_value, max_value].
absl::StatusOr<int64_t> JsonRequiredInt(const nlohmann::json& obj, absl::string_view key, absl::string_view where,
                                        int64_t min_value, int64_t max_value);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_FORMATS_JSON_UTIL_H_
