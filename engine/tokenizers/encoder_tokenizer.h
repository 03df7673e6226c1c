// EncoderTokenizer: what an encoder (BERT, XLM-RoBERTa) needs from its
// tokenizer: ids with byte offsets for one text or a text pair, the
// post-processor's special tokens around them, truncation to a length limit,
// and decoding. Implemented by WordPieceTokenizer (BERT) and
// UnigramTokenizer (XLM-RoBERTa's SentencePiece vocabulary); both read a
// Hugging Face tokenizer.json and produce exactly the `tokenizers` library's
// ids. LoadEncoderTokenizer picks one by the file's model.type.
//
// Implementations are immutable after construction and thread-safe.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_ENCODER_TOKENIZER_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_ENCODER_TOKENIZER_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "engine/tokenizers/added_vocabulary.h"
#include "engine/tokenizers/sequence_template.h"
#include "engine/tokenizers/text_encoding.h"

namespace attnserve {

class EncoderTokenizer {
 public:
  virtual ~EncoderTokenizer() = default;

  // Tokenizes `text` (must be valid UTF-8: INVALID_ARGUMENT otherwise): the
  // added tokens split out, the text between them by EncodeSegment, the
  // post-processor's template around the result. With
  // max_length > 0 the result is cut to at most max_length tokens, counting
  // the special tokens when add_special_tokens (the tail of the text is
  // dropped, as Hugging Face's truncation of a single sequence does; its
  // start with TruncationSide::kStart).
  absl::StatusOr<TextEncoding> Encode(absl::string_view text, bool add_special_tokens, int max_length = 0,
                                      TruncationSide side = TruncationSide::kEnd) const;
  // A text pair as a cross-encoder reads it, by the post-processor's pair
  // template (BERT: [CLS] a [SEP] b [SEP]; XLM-R: <s> a </s></s> b </s>).
  // With max_length > 0 the texts are cut by Hugging Face's "longest_first"
  // rule (see TruncateLongestFirst), each at the end `side` names. Offsets
  // are byte spans in the text each token came from.
  absl::StatusOr<TextEncoding> EncodePair(absl::string_view first, absl::string_view second, int max_length = 0,
                                          TruncationSide side = TruncationSide::kEnd) const;
  // The vocabulary entry ("[UNK]", "▁the"); out-of-range ids give
  // "<invalid id N>".
  std::string IdToToken(int32_t id) const;
  // The tokenizer.json decoder's text. INVALID_ARGUMENT for ids out of range.
  virtual absl::StatusOr<std::string> Decode(absl::Span<const int32_t> ids, bool skip_special_tokens) const = 0;
  int vocab_size() const { return static_cast<int>(id_to_token_.size()); }
  // Added tokens marked special ([CLS], <s>, <mask>, ...).
  bool IsSpecial(int32_t id) const;
  // "wordpiece", "unigram", "bpe".
  virtual absl::string_view kind() const = 0;

 protected:
  // Tokenizes a stretch of text that holds no added token, appending its ids
  // and offsets (shifted by `base`, its place in the whole text) to `out`.
  virtual absl::Status EncodeSegment(absl::string_view segment, uint32_t base, TextEncoding* out) const = 0;
  // Appends an added token to `out`: `matched` is the original text it
  // matched (lstrip / rstrip included), [begin, end) its byte span there.
  virtual void AppendAddedToken(absl::string_view matched, int32_t id, uint32_t begin, uint32_t end,
                                TextEncoding* out) const;

  // The vocabulary's entries, ids 0..n-1 (n: `size`, at least one past the
  // last added token), with the added tokens (added_, read first) over them
  // and their special flags.
  void SetEntries(int64_t size, const std::vector<std::string>& model_entries);
  // The entries of `ids` in order, special ones left out when asked;
  // INVALID_ARGUMENT naming the index of an id outside the vocabulary.
  absl::StatusOr<std::vector<std::string>> Entries(absl::Span<const int32_t> ids, bool skip_special_tokens) const;

  // Filled by the implementations when they read tokenizer.json.
  AddedVocabulary added_;
  SequenceTemplate template_;

 private:
  std::vector<std::string> id_to_token_;
  std::vector<bool> special_;
};

// Reads tokenizer.json and builds the tokenizer its model.type names
// (WordPiece, Unigram or BPE); INVALID_ARGUMENT naming the file otherwise.
absl::StatusOr<std::unique_ptr<EncoderTokenizer>> LoadEncoderTokenizer(const std::string& path);
absl::StatusOr<std::unique_ptr<EncoderTokenizer>> EncoderTokenizerFromJson(const nlohmann::json& json,
                                                                           const std::string& path);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_ENCODER_TOKENIZER_H_
