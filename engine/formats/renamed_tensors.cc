#include "engine/formats/renamed_tensors.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"

namespace attnserve {

absl::Status RenamedTensors::Add(const std::string& name, const std::vector<int64_t>& shape, const std::string& as,
                                 int part, int parts) {
  ASSIGN_OR_RETURN(const SafetensorsTensor* t, source_.GetWithShape(name, shape));
  SafetensorsTensor v = *t;
  // Errors at load name the tensor as read; the file names the source's.
  v.file = absl::StrCat(t->file, " (", t->name, ")");
  v.name = as;
  ASSIGN_OR_RETURN(SafetensorsTensor block, RowBlock(std::move(v), part, parts));
  views_.push_back(std::move(block));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<SafetensorsArchive>> RenamedTensors::Finish() && {
  return SafetensorsArchive::FromTensors(source_.source(), std::move(views_), nullptr);
}

std::string PrefixBefore(const SafetensorsArchive& weights, const std::string& suffix) {
  for (const std::string& name : weights.Names()) {
    if (absl::EndsWith(name, suffix)) return name.substr(0, name.size() - suffix.size());
  }
  return "";
}

}  // namespace attnserve
