// config.json of a Hugging Face model directory: the architecture and the raw
// JSON, with typed accessors whose errors name the file and the field. Each
// model family reads its own hyper-parameters through these.
#ifndef ATTNSERVE_ENGINE_FORMATS_HF_CONFIG_H_
#define ATTNSERVE_ENGINE_FORMATS_HF_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"

namespace attnserve {

class HfConfig {
 public:
  // Reads DIR/config.json. NOT_FOUND if absent; INVALID_ARGUMENT if not a JSON
  // object or model_type is missing.
  static absl::StatusOr<HfConfig> Read(const std::string& dir);
  // From JSON already in memory; `path` names it in errors.
  static absl::StatusOr<HfConfig> FromJson(nlohmann::json json, const std::string& path);

  const std::string& path() const { return path_; }
  const std::string& model_type() const { return model_type_; }
  const std::vector<std::string>& architectures() const { return architectures_; }
  const nlohmann::json& json() const { return json_; }

  // Required integer in [min_value, max_value].
  absl::StatusOr<int64_t> Int(const std::string& key, int64_t min_value, int64_t max_value) const;
  // Optional integer (default when missing or null), range-checked.
  absl::StatusOr<int64_t> IntOr(const std::string& key, int64_t default_value, int64_t min_value,
                                int64_t max_value) const;
  absl::StatusOr<double> DoubleOr(const std::string& key, double default_value) const;
  absl::StatusOr<std::string> StringOr(const std::string& key, const std::string& default_value) const;
  absl::StatusOr<bool> BoolOr(const std::string& key, bool default_value) const;

 private:
  std::string path_;
  std::string model_type_;
  std::vector<std::string> architectures_;
  nlohmann::json json_;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_FORMATS_HF_CONFIG_H_
