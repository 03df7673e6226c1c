#include "engine/formats/hf_config.h"

#include <filesystem>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/formats/json_util.h"

namespace attnserve {

absl::StatusOr<HfConfig> HfConfig::Read(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "config.json").string();
  ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(path));
  return FromJson(std::move(j), path);
}

absl::StatusOr<HfConfig> HfConfig::FromJson(nlohmann::json json, const std::string& path) {
  if (!json.is_object()) return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  HfConfig c;
  c.path_ = path;
  ASSIGN_OR_RETURN(std::optional<std::string> model_type, JsonOptionalString(json, "model_type", path));
  if (!model_type.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": missing required field \"model_type\""));
  }
  c.model_type_ = *model_type;
  auto arch = json.find("architectures");
  if (arch != json.end() && arch->is_array()) {
    for (const nlohmann::json& a : *arch) {
      if (a.is_string()) c.architectures_.push_back(a.get<std::string>());
    }
  }
  c.json_ = std::move(json);
  return c;
}

absl::StatusOr<int64_t> HfConfig::Int(const std::string& key, int64_t min_value, int64_t max_value) const {
  return JsonRequiredInt(json_, key, path_, min_value, max_value);
}

absl::StatusOr<int64_t> HfConfig::IntOr(const std::string& key, int64_t default_value, int64_t min_value,
                                        int64_t max_value) const {
  ASSIGN_OR_RETURN(std::optional<int64_t> v, JsonOptionalInt(json_, key, path_));
  if (!v.has_value()) return default_value;
  if (*v < min_value || *v > max_value) {
    return absl::InvalidArgumentError(absl::StrCat(path_, ": field \"", key, "\" = ", *v, " is outside [",
                                                   min_value, ", ", max_value, "]"));
  }
  return *v;
}

absl::StatusOr<double> HfConfig::DoubleOr(const std::string& key, double default_value) const {
  ASSIGN_OR_RETURN(std::optional<double> v, JsonOptionalDouble(json_, key, path_));
  return v.value_or(default_value);
}

absl::StatusOr<std::string> HfConfig::StringOr(const std::string& key, const std::string& default_value) const {
  ASSIGN_OR_RETURN(std::optional<std::string> v, JsonOptionalString(json_, key, path_));
  return v.value_or(default_value);
}

absl::StatusOr<bool> HfConfig::BoolOr(const std::string& key, bool default_value) const {
  ASSIGN_OR_RETURN(std::optional<bool> v, JsonOptionalBool(json_, key, path_));
  return v.value_or(default_value);
}

}  // namespace attnserve
