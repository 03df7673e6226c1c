// The special tokens a tokenizer.json post-processor puts around one text or
// a pair (TemplateProcessing, BertProcessing, RobertaProcessing), with their
// segment ids, and Hugging Face's truncation to a length limit that counts
// them.
//
// BERT:    single [CLS] $A [SEP]          pair [CLS] $A [SEP] $B:1 [SEP]:1
// XLM-R:   single <s> $A </s>             pair <s> $A </s> </s> $B </s>
// RoBERTa: as XLM-R (RobertaProcessing; every token in segment 0)
//
// Immutable after parsing; thread-safe.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_SEQUENCE_TEMPLATE_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_SEQUENCE_TEMPLATE_H_

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "engine/tokenizers/text_encoding.h"

namespace attnserve {

class SequenceTemplate {
 public:
  // Reads tokenizer.json's post_processor; special token ids must lie in
  // [0, vocab_size). INVALID_ARGUMENT naming the file for another type, a
  // template without exactly one $A (single) or one $A and one $B (pair).
  static absl::StatusOr<SequenceTemplate> FromPostProcessor(const nlohmann::json& post_processor,
                                                            int64_t vocab_size, const std::string& path);

  // The tokens the template adds around one text (pair = false) or two.
  int AddedTokens(bool pair) const;
  // The first special token id of the single template (BERT's [CLS]), -1 if
  // it has none.
  int32_t FirstSpecialId() const;
  int32_t LastSpecialId() const;

  // `text` is the tokenized text without special tokens (ids and offsets).
  // With add_special_tokens the single template is applied. With
  // max_length > 0 the text is cut so that the result has at most
  // max_length tokens (at the end `side` names); untruncated_length and
  // truncated are set.
  TextEncoding Single(TextEncoding text, bool add_special_tokens, int max_length,
                      TruncationSide side = TruncationSide::kEnd) const;
  // The pair template, the texts cut by longest_first (TruncateLongestFirst)
  // to fit max_length (> 0) with the added tokens; type_ids filled.
  TextEncoding Pair(TextEncoding first, TextEncoding second, int max_length,
                    TruncationSide side = TruncationSide::kEnd) const;

 private:
  struct Piece {
    int sequence = -1;             // 0: $A, 1: $B; -1: special tokens
    std::vector<int32_t> ids;      // when special
    int32_t type_id = 0;
  };
  TextEncoding Assemble(const std::vector<Piece>& pieces, const TextEncoding* sequences[2]) const;

  std::vector<Piece> single_;
  std::vector<Piece> pair_;
};

// Hugging Face tokenizers' TruncationStrategy::LongestFirst for two lengths
// and a budget: the shorter is kept whole when the longer can take the rest,
// else the budget is halved, the odd token to the longer (to the second on a
// tie). Returns the lengths to keep.
std::pair<size_t, size_t> TruncateLongestFirst(size_t first, size_t second, size_t budget);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_SEQUENCE_TEMPLATE_H_
