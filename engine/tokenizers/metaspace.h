// The pre-tokenizer and decoder of SentencePiece-derived tokenizer.json
// files: Metaspace (spaces become "▁", one is put before each word as
// prepend_scheme says, and the text is split before each "▁"), optionally
// after WhitespaceSplit (what transformers 5 writes for XLM-R:
// Sequence[WhitespaceSplit, Metaspace]); the Metaspace decoder turns "▁"
// back into spaces and drops the first one.
//
// Immutable after parsing; thread-safe.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_METASPACE_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_METASPACE_H_

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/tokenizers/aligned_text.h"

namespace attnserve {

enum class PrependScheme { kAlways, kFirst, kNever };

// A Metaspace component's prepend_scheme ("always", "first", "never";
// another string is INVALID_ARGUMENT naming `path`), or in older files
// add_prefix_space (true, the default: always; false: never). Shared by the
// decoder tokenizers' and the encoder tokenizers' readers.
absl::StatusOr<PrependScheme> ReadPrependScheme(const nlohmann::json& metaspace, const std::string& path);

class MetaspacePreTokenizer {
 public:
  // tokenizer.json's pre_tokenizer: Metaspace, WhitespaceSplit, a Sequence
  // of them, or null (none: Split keeps the text whole). INVALID_ARGUMENT
  // naming the file for anything else.
  static absl::StatusOr<MetaspacePreTokenizer> FromJson(const nlohmann::json& pre_tokenizer,
                                                        const std::string& path);

  // Gemma's pre_tokenizer: Split on " " (not inverted). After a normalizer
  // that has replaced every space with "▁" it finds nothing to split, so a
  // reader may take it as none.
  static bool IsSplitOnSpace(const nlohmann::json& pre_tokenizer);

  // Splits normalized text into the pieces the model tokenizes one by one.
  std::vector<AlignedText> Split(AlignedText text) const;

 private:
  struct Step {
    bool whitespace_split = false;  // else Metaspace
    char32_t replacement = U'\u2581';
    PrependScheme prepend = PrependScheme::kAlways;
    bool split = true;
  };
  std::vector<Step> steps_;
};

// The Metaspace decoder (or none): tokens concatenated, "▁" read as a space,
// the first token's leading one dropped unless prepend_scheme is never.
class MetaspaceDecoder {
 public:
  // tokenizer.json's decoder: Metaspace or null. INVALID_ARGUMENT otherwise.
  static absl::StatusOr<MetaspaceDecoder> FromJson(const nlohmann::json& decoder, const std::string& path);
  std::string Decode(const std::vector<std::string>& tokens) const;

 private:
  bool enabled_ = false;
  std::string replacement_ = "\u2581";
  bool strip_first_ = true;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_METASPACE_H_
