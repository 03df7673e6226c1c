// A BERT WordPiece tokenizer described by vocab.txt (+ tokenizer_config.json)
// alone, for checkpoints saved without tokenizer.json: builds the
// tokenizer.json transformers' BertConverter would write for them
// (BertNormalizer with the config's do_lower_case, tokenize_chinese_chars
// and strip_accents; BertPreTokenizer; WordPiece with "##" pieces; the
// [CLS]/[SEP] template; the five special tokens matched in raw text), for
// WordPieceTokenizer::FromJson to read like any other.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_BERT_VOCAB_TXT_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_BERT_VOCAB_TXT_H_

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"

namespace attnserve {

// vocab_txt: one token per line, its id the line number (a repeated token
// keeps its last line, as transformers' load_vocab). tokenizer_config: the
// path of tokenizer_config.json, or empty for BERT's defaults (lower case,
// Chinese characters split, [UNK]/[SEP]/[PAD]/[CLS]/[MASK]). Errors name the
// file and the reason (unreadable, empty, a special token missing).
absl::StatusOr<nlohmann::json> BertTokenizerJsonFromVocab(const std::string& vocab_txt,
                                                          const std::string& tokenizer_config);

// What BertConverter needs beside the vocabulary: the normalizer's switches
// and the special tokens (token, id), each in the vocabulary (pad and mask
// may be absent: id -1).
struct BertTokenizerSpec {
  nlohmann::json lowercase = true;
  nlohmann::json tokenize_chinese_chars = true;
  nlohmann::json strip_accents = nullptr;  // null: follow lowercase
  std::pair<std::string, int64_t> unk, sep, cls;
  std::pair<std::string, int64_t> pad{"", -1}, mask{"", -1};
  // Further tokens matched whole in the raw text (a GGUF file's other
  // control tokens), as (token, id).
  std::vector<std::pair<std::string, int64_t>> extra_special;
};

// The tokenizer.json BertConverter writes for `vocab` (token -> id, "##"
// continuations) and `spec`: shared by vocab.txt and a GGUF file's
// WordPiece vocabulary.
nlohmann::json BertTokenizerJson(nlohmann::json vocab, const BertTokenizerSpec& spec);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_BERT_VOCAB_TXT_H_
