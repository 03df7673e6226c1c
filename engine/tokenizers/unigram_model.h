// SentencePiece's Unigram model as Hugging Face tokenizers runs it: the
// segmentation of a piece with the highest total score (Viterbi over every
// vocabulary entry that matches at each character; on equal scores the
// first-found, shorter, entry), a character no entry covers scored as
// <unk> (the lowest score minus 10), consecutive unknown characters fused
// into one <unk>, or spelled as <0xNN> byte tokens when byte_fallback is on.
//
// Immutable after parsing; thread-safe.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_UNIGRAM_MODEL_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_UNIGRAM_MODEL_H_

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "engine/tokenizers/aligned_text.h"
#include "engine/tokenizers/encoder_tokenizer.h"

namespace attnserve {

class UnigramModel {
 public:
  // tokenizer.json's model {type: Unigram, vocab: [[piece, score]...],
  // unk_id, byte_fallback}. INVALID_ARGUMENT naming the file and the entry.
  static absl::StatusOr<UnigramModel> FromJson(const nlohmann::json& model, const std::string& path);

  // Appends the tokens of one pre-tokenized piece: ids and the original byte
  // spans of their characters.
  void Tokenize(const AlignedText& piece, TextEncoding* out) const;

  int vocab_size() const { return static_cast<int>(pieces_.size()); }
  const std::string& piece(int32_t id) const { return pieces_[id]; }
  int32_t unk_id() const { return unk_id_; }

 private:
  // A byte trie of the pieces, so that the candidates at a position are
  // found by walking its bytes until no piece continues (what tokenizers'
  // trie does), not by looking up every length.
  struct TrieNode {
    int32_t piece = -1;  // the id of the piece ending here
  };
  void BuildTrie();
  int32_t Child(int32_t node, uint8_t byte) const;

  std::vector<std::string> pieces_;
  std::vector<double> scores_;
  std::vector<TrieNode> trie_;  // node 0: the root
  // Each node's edges are [edge_begin_[node], edge_begin_[node + 1]) of the
  // byte-sorted edge_byte_ / edge_child_: 5 bytes an edge and 4 a node (about
  // 10 MB for XLM-R's 250k pieces), and a step searches only the node's own
  // few children.
  std::vector<int32_t> edge_begin_;
  std::vector<uint8_t> edge_byte_;
  std::vector<int32_t> edge_child_;
  // Looked up by string_view (transparent hash). std::unordered_map: see
  // wordpiece.h on absl::flat_hash_map under UBSan.
  struct PieceHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::unordered_map<std::string, int32_t, PieceHash, std::equal_to<>> ids_;
  int32_t unk_id_ = -1;
  double unk_score_ = 0;
  bool byte_fallback_ = false;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_UNIGRAM_MODEL_H_
