// The normalizer chain of a SentencePiece-derived tokenizer.json (XLM-R,
// T5, mBART, DeBERTa-v3...): Precompiled (sentencepiece's charsmap), Replace
// (a string or a regular expression such as " {2,}"), Strip, Prepend, NFC
// (transformers 5's DebertaV2Tokenizer writes it), or a Sequence of them. Applied with tokenizers' alignment rules (engine/tokenizers/
// aligned_text.h), including Precompiled's grapheme-wise rewriting: a
// grapheme cluster under 6 bytes whose prefix has a rule is replaced whole by
// the shortest such rule's output, else each character by its own rule.
//
// Immutable after parsing; thread-safe.
#ifndef ATTNSERVE_ENGINE_TOKENIZERS_SPM_NORMALIZER_H_
#define ATTNSERVE_ENGINE_TOKENIZERS_SPM_NORMALIZER_H_

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/statusor.h"
#include "engine/tokenizers/aligned_text.h"
#include "engine/tokenizers/precompiled_charsmap.h"

namespace re2 {
class RE2;
}

namespace attnserve {

class SpmNormalizer {
 public:
  // `normalizer` is tokenizer.json's normalizer (null: none). INVALID_ARGUMENT
  // naming the file and the step for other types or bad patterns.
  static absl::StatusOr<SpmNormalizer> FromJson(const nlohmann::json& normalizer, const std::string& path);

  void Apply(AlignedText* text) const;
  // The normalized form of `content` (an added token's, to match it in
  // normalized text); "" for invalid UTF-8.
  std::string NormalizeString(absl::string_view content) const;

 private:
  struct Step {
    enum class Kind { kPrecompiled, kReplace, kStrip, kPrepend, kNfc } kind;
    std::shared_ptr<const PrecompiledCharsmap> charsmap;  // kPrecompiled
    std::string literal;                                  // kReplace with a string pattern
    std::shared_ptr<const re2::RE2> regex;                // kReplace with a regex pattern
    std::u32string content;                               // kReplace, kPrepend
    bool strip_left = false, strip_right = false;         // kStrip
  };
  static absl::Status AddSteps(const nlohmann::json& j, const std::string& path, std::vector<Step>* steps);
  static void Precompiled(const PrecompiledCharsmap& charsmap, AlignedText* text);
  static void Replace(const Step& step, AlignedText* text);
  static void Nfc(AlignedText* text);

  std::vector<Step> steps_;
};

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_TOKENIZERS_SPM_NORMALIZER_H_
