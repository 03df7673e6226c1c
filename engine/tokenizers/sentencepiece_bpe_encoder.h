// The SentencePiece-style BPE tokenizer of Llama-2 / Mistral-family
// embedders (e5-mistral-7b-instruct, SFR-Embedding-Mistral, Linq-Embed) read
// from their tokenizer.json as an encoder needs it (ids and byte offsets),
// producing exactly the `tokenizers` library's:
//   added tokens   matched in the raw text, then the normalized: true ones
//                  in the normalized text (AddedVocabulary)
//   normalizer     the SentencePiece chain (spm_normalizer.h): the legacy
//                  files' Prepend("▁") + Replace(" ", "▁"), aligned as
//                  tokenizers aligns them
//   pre_tokenizer  none, or Metaspace (transformers 5's files; metaspace.h)
//   model          BPE over characters: merges by rank (ties: leftmost), a
//                  symbol outside the vocabulary as its <0xNN> byte tokens
//                  (byte_fallback; each spanning the character) or unk_token
//                  (consecutive ones fused with fuse_unk)
//   post_processor TemplateProcessing (<s> $A, or <s> $A </s> where the
//                  file appends the end token)
//   decoder        Replace("▁", " "), ByteFallback, Fuse, Strip(" ", 1, 0),
//                  or Metaspace
// (The decoder tokenizers' HfSentencePieceBpe runs the same model for
// Generate; this one keeps each token's span.)
//
// Immutable after construction; thread-safe.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_SENTENCEPIECE_BPE_ENCODER_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_SENTENCEPIECE_BPE_ENCODER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "engine/tokenizers/aligned_text.h"
#include "engine/tokenizers/encoder_tokenizer.h"
#include "engine/tokenizers/metaspace.h"
#include "engine/tokenizers/spm_normalizer.h"

namespace attnserve {

class SentencePieceBpeEncoder : public EncoderTokenizer {
 public:
  // Whether tokenizer.json is a SentencePiece-style BPE ("▁" for spaces,
  // byte_fallback) rather than a byte-level one.
  static bool Matches(const nlohmann::json& json);
  // INVALID_ARGUMENT naming the file and the component for anything
  // unsupported (dropout, a subword prefix, ignore_merges, another
  // pre-tokenizer or decoder).
  static absl::StatusOr<std::unique_ptr<SentencePieceBpeEncoder>> FromJson(const nlohmann::json& json,
                                                                          const std::string& path);

  absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids, bool skip_special_tokens) const override;
  absl::string_view kind() const override { return "sentencepiece_bpe"; }

 private:
  SentencePieceBpeEncoder() = default;
  absl::Status EncodeSegment(absl::string_view segment, uint32_t base, TextEncoding* out) const override;
  // BPE of one pre-tokenized piece, appending ids and spans.
  void Tokenize(const AlignedText& piece, TextEncoding* out) const;

  SpmNormalizer normalizer_;
  MetaspacePreTokenizer pre_tokenizer_;
  absl::flat_hash_map<std::string, int32_t> piece_to_id_;
  absl::flat_hash_map<std::string, int32_t> merge_rank_;  // left + " " + right -> rank
  std::vector<int32_t> byte_id_;  // <0xNN> -> id, -1 when absent
  int32_t unk_id_ = -1;
  bool byte_fallback_ = false;
  bool fuse_unk_ = false;
  bool strip_leading_space_ = true;  // the decoder's Strip(" ", 1, 0) / Metaspace's first space
  std::string path_;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_SENTENCEPIECE_BPE_ENCODER_H_
