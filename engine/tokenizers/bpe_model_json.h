// Reading a tokenizer.json "BPE" model's vocabulary and merges, shared by the
// decoder tokenizers (tokenizer_factory.cc) and the encoders' byte-level BPE
// (RoBERTa, byte_level_bpe_encoder.h).
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_BPE_MODEL_JSON_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_BPE_MODEL_JSON_H_

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"

namespace attnserve {

// model.vocab ({piece: id}) as a table by id, one past the largest id long;
// ids no piece names are "". INVALID_ARGUMENT naming the file and the piece
// for an id outside [0, 2^24].
absl::StatusOr<std::vector<std::string>> ReadBpeVocab(const nlohmann::json& model, const std::string& path);
// model.merges in rank order, each written "a b" or [a, b].
absl::StatusOr<std::vector<std::pair<std::string, std::string>>> ReadBpeMerges(const nlohmann::json& model,
                                                                               const std::string& path);

// model.unk_token's id as `find` gives it (find: piece -> id, nullopt when
// absent); -1 when the model names no unk_token. INVALID_ARGUMENT naming
// the file when the vocabulary lacks it.
absl::StatusOr<int32_t> ReadBpeUnkId(const nlohmann::json& model,
                                     absl::FunctionRef<std::optional<int32_t>(const std::string&)> find,
                                     const std::string& path);
// The same through a piece -> id map (std::unordered_map, absl::flat_hash_map).
template <typename PieceToId>
absl::StatusOr<int32_t> ReadBpeUnkId(const nlohmann::json& model, const PieceToId& piece_to_id,
                                     const std::string& path) {
  auto lookup = [&](const std::string& piece) -> std::optional<int32_t> {
    auto it = piece_to_id.find(piece);
    if (it == piece_to_id.end()) return std::nullopt;
    return it->second;
  };
  // A FunctionRef, so that the call takes the overload above, not this one.
  const absl::FunctionRef<std::optional<int32_t>(const std::string&)> find = lookup;
  return ReadBpeUnkId(model, find, path);
}

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_BPE_MODEL_JSON_H_
