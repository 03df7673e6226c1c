// A checkpoint's tensors seen under the names another loader reads (a
// Nomic BERT's or GTE's under BERT's), each a view of the checkpoint's
// memory or a row block of one (a fused projection's query, key or value
// rows; a fused up/gate's halves). Checks every tensor's shape as it is
// added, so a missing or misshapen tensor is named as the checkpoint
// spells it, not by the name it would be read under.
#ifndef ATTNSERVE_ENGINE_FORMATS_RENAMED_TENSORS_H_
#define ATTNSERVE_ENGINE_FORMATS_RENAMED_TENSORS_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "engine/formats/safetensors.h"

namespace attnserve {

class RenamedTensors {
 public:
  // `source` must outlive the archive Finish returns.
  explicit RenamedTensors(const SafetensorsArchive& source) : source_(source) {}

  // The source's tensor `name` (which must have `shape`) as `as`; with
  // `parts` > 1 its row block `part` of `parts`. NOT_FOUND /
  // INVALID_ARGUMENT naming the source's tensor otherwise.
  absl::Status Add(const std::string& name, const std::vector<int64_t>& shape, const std::string& as, int part = 0,
                   int parts = 1);
  bool Has(const std::string& name) const { return source_.Find(name) != nullptr; }

  absl::StatusOr<std::unique_ptr<SafetensorsArchive>> Finish() &&;

 private:
  const SafetensorsArchive& source_;
  std::vector<SafetensorsTensor> views_;
};

// The prefix before the first tensor name that ends with `suffix` (""
// when none does): a task model's checkpoint nests the encoder under one.
std::string PrefixBefore(const SafetensorsArchive& weights, const std::string& suffix);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_FORMATS_RENAMED_TENSORS_H_
