#include "engine/tokenizers/bpe_model_json.h"

#include <algorithm>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace attnserve {
namespace {

absl::Status Bad(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

}  // namespace

absl::StatusOr<std::vector<std::string>> ReadBpeVocab(const nlohmann::json& model, const std::string& path) {
  if (!model.is_object() || !model.contains("vocab") || !model["vocab"].is_object()) {
    return Bad(path, "model.vocab is missing");
  }
  size_t n = 0;
  for (const auto& [piece, id] : model["vocab"].items()) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() > (1 << 24)) {
      return Bad(path, absl::StrCat("model.vocab['", piece, "'] is not a valid id"));
    }
    n = std::max(n, static_cast<size_t>(id.get<int64_t>()) + 1);
  }
  std::vector<std::string> pieces(n);
  for (const auto& [piece, id] : model["vocab"].items()) pieces[id.get<size_t>()] = piece;
  return pieces;
}

absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ReadBpeMerges(const nlohmann::json& model,
                                                                               const std::string& path) {
  if (!model.is_object() || !model.contains("merges") || !model["merges"].is_array()) {
    return Bad(path, "model.merges is missing");
  }
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(model["merges"].size());
  for (const auto& m : model["merges"]) {
    if (m.is_string()) {
      const std::string s = m.get<std::string>();
      // From 1: a merge's first symbol may itself be a space.
      const size_t sp = s.find(' ', 1);
      if (sp == std::string::npos) return Bad(path, absl::StrCat("merge '", s, "' is not two symbols"));
      merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      return Bad(path, "model.merges entries must be \"a b\" or [a, b]");
    }
  }
  return merges;
}

absl::StatusOr<int32_t> ReadBpeUnkId(const nlohmann::json& model,
                                     absl::FunctionRef<std::optional<int32_t>(const std::string&)> find,
                                     const std::string& path) {
  if (!model.contains("unk_token") || !model["unk_token"].is_string()) return -1;
  const std::string unk = model["unk_token"].get<std::string>();
  const std::optional<int32_t> id = find(unk);
  if (!id.has_value()) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": model.unk_token \"", unk, "\" is not in model.vocab"));
  }
  return *id;
}

}  // namespace attnserve
