#include "engine/tokenizers/gguf_encoder_tokenizer.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/tokenizers/bert_vocab_txt.h"
#include "engine/tokenizers/byte_level_bpe_encoder.h"
#include "engine/tokenizers/pretokenizer.h"
#include "engine/tokenizers/unigram_tokenizer.h"
#include "engine/tokenizers/wordpiece.h"

namespace attnserve {
namespace {

// llama.cpp's token types.
constexpr int64_t kNormalToken = 1;
constexpr int64_t kControlToken = 3;
constexpr int64_t kUserDefinedToken = 4;

nlohmann::json SpecialItem(const std::string& token) {
  return {{"SpecialToken", {{"id", token}, {"type_id", 0}}}};
}

// tokenizer.ggml.<key>_token_id as a token string, or "" when absent or out of range.
absl::StatusOr<std::string> TokenOf(const GgufFile& g, const std::vector<std::string>& tokens, const char* key) {
  ASSIGN_OR_RETURN(int64_t id, g.GetIntOr(absl::StrCat("tokenizer.ggml.", key, "_token_id"), -1));
  if (id < 0 || id >= static_cast<int64_t>(tokens.size())) return std::string();
  return tokens[static_cast<size_t>(id)];
}

// tokenizer.ggml.token_type, one per token (all normal, 1, when absent).
absl::StatusOr<std::vector<int64_t>> TokenTypes(const GgufFile& g, size_t count) {
  std::vector<int64_t> types(count, kNormalToken);
  if (g.Find("tokenizer.ggml.token_type") != nullptr) {
    ASSIGN_OR_RETURN(const std::vector<int64_t>* t, g.GetIntArray("tokenizer.ggml.token_type"));
    if (t->size() != count) {
      return absl::InvalidArgumentError(absl::StrCat(g.where(), ": tokenizer.ggml.token_type has ", t->size(),
                                                     " entries for ", count, " tokens"));
    }
    types = *t;
  }
  return types;
}

// The WordPiece vocabulary of tokenizer.ggml.model "bert", which llama.cpp's
// converter writes in its "phantom space" spelling (a word-initial token
// with a leading U+2581, a continuation without its "##", control tokens as
// they are), spelled back as Hugging Face's tokenizer.json holds it, and
// tokenized as that tokenizer does (BertNormalizer, BertPreTokenizer,
// [CLS] ... [SEP]): the model's own tokenization. llama.cpp's own WordPiece
// splitter differs from it on some scripts (it does not strip a combining
// mark the way BertNormalizer does) and on words over 100 characters (no
// [UNK]); plain text tokenizes the same. The file does not record
// do_lower_case: a vocabulary without an upper-case ASCII letter in a normal
// token is an uncased one (lower case, accents stripped), as BERT's uncased
// vocabularies are; any other is read cased.
absl::StatusOr<std::unique_ptr<EncoderTokenizer>> WordPieceFromGguf(const GgufFile& g,
                                                                    const std::vector<std::string>& tokens) {
  ASSIGN_OR_RETURN(std::vector<int64_t> types, TokenTypes(g, tokens.size()));
  static constexpr absl::string_view kPhantom = "\xE2\x96\x81";
  std::vector<std::string> spelled(tokens.size());
  nlohmann::json vocab = nlohmann::json::object();
  bool cased = false;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& t = tokens[i];
    if (types[i] == kControlToken) {
      spelled[i] = t;
    } else if (absl::StartsWith(t, kPhantom)) {
      spelled[i] = t.substr(kPhantom.size());
    } else {
      spelled[i] = "##" + t;
    }
    if (types[i] == kNormalToken) {
      for (char c : spelled[i]) cased = cased || (c >= 'A' && c <= 'Z');
    }
    vocab[spelled[i]] = i;
  }
  // A special token by the first of `keys` the file sets; id -1 when none
  // (INVALID_ARGUMENT when `required`).
  auto special = [&](std::initializer_list<const char*> keys,
                     bool required) -> absl::StatusOr<std::pair<std::string, int64_t>> {
    for (const char* key : keys) {
      const std::string name = absl::StrCat("tokenizer.ggml.", key);
      ASSIGN_OR_RETURN(int64_t id, g.GetIntOr(name, -1));
      if (id < 0) continue;
      if (id >= static_cast<int64_t>(tokens.size())) {
        return absl::InvalidArgumentError(
            absl::StrCat(g.where(), ": ", name, " ", id, " is not below the vocabulary's ", tokens.size(), " tokens"));
      }
      return std::make_pair(spelled[static_cast<size_t>(id)], id);
    }
    if (required) {
      return absl::InvalidArgumentError(absl::StrCat(g.where(), ": tokenizer.ggml.", *keys.begin(),
                                                     " is not set (a WordPiece vocabulary needs it)"));
    }
    return std::make_pair(std::string(), int64_t{-1});
  };
  BertTokenizerSpec spec;
  spec.lowercase = !cased;
  ASSIGN_OR_RETURN(spec.unk, special({"unknown_token_id"}, true));
  ASSIGN_OR_RETURN(spec.cls, special({"cls_token_id", "bos_token_id"}, true));
  ASSIGN_OR_RETURN(spec.sep, special({"seperator_token_id", "eos_token_id"}, true));
  ASSIGN_OR_RETURN(spec.pad, special({"padding_token_id"}, false));
  ASSIGN_OR_RETURN(spec.mask, special({"mask_token_id"}, false));
  for (size_t i = 0; i < tokens.size(); ++i) {
    const int64_t id = static_cast<int64_t>(i);
    if ((types[i] == kControlToken || types[i] == kUserDefinedToken) && id != spec.unk.second &&
        id != spec.cls.second && id != spec.sep.second && id != spec.pad.second && id != spec.mask.second) {
      spec.extra_special.emplace_back(spelled[i], id);
    }
  }
  ASSIGN_OR_RETURN(std::unique_ptr<WordPieceTokenizer> t,
                   WordPieceTokenizer::FromJson(BertTokenizerJson(std::move(vocab), spec), g.where()));
  return std::unique_ptr<EncoderTokenizer>(std::move(t));
}

// The post-processor llama.cpp's add_special gives: bos before and eos
// after the text when the file asks; a pair (a reranker's query and
// document) as llama.cpp's server formats one: [bos] A [eos] [sep] B [eos]
// (XLM-R: <s> A </s></s> B </s>, transformers' own pair template), every
// token of type 0 (llama.cpp adds token-type row 0 to every token; XLM-R
// has no other row).
absl::StatusOr<nlohmann::json> SpecialTemplate(const GgufFile& g, const std::vector<std::string>& tokens) {
  ASSIGN_OR_RETURN(bool add_bos, g.GetBoolOr("tokenizer.ggml.add_bos_token", false));
  ASSIGN_OR_RETURN(bool add_eos, g.GetBoolOr("tokenizer.ggml.add_eos_token", false));
  ASSIGN_OR_RETURN(bool add_sep, g.GetBoolOr("tokenizer.ggml.add_sep_token", false));
  ASSIGN_OR_RETURN(std::string bos, TokenOf(g, tokens, "bos"));
  ASSIGN_OR_RETURN(std::string eos, TokenOf(g, tokens, "eos"));
  ASSIGN_OR_RETURN(std::string sep, TokenOf(g, tokens, "seperator"));
  nlohmann::json single = nlohmann::json::array();
  if (add_bos && !bos.empty()) single.push_back(SpecialItem(bos));
  single.push_back({{"Sequence", {{"id", "A"}, {"type_id", 0}}}});
  if (add_eos && !eos.empty()) single.push_back(SpecialItem(eos));
  nlohmann::json pair = single;
  if (add_sep && !sep.empty()) pair.push_back(SpecialItem(sep));
  pair.push_back({{"Sequence", {{"id", "B"}, {"type_id", 0}}}});
  if (add_eos && !eos.empty()) pair.push_back(SpecialItem(eos));
  nlohmann::json specials = nlohmann::json::object();
  for (const std::string& t : {bos, eos, sep}) {
    if (t.empty()) continue;
    const auto it = std::find(tokens.begin(), tokens.end(), t);
    specials[t] = {{"id", t}, {"ids", {it - tokens.begin()}}, {"tokens", {t}}};
  }
  return nlohmann::json{{"type", "TemplateProcessing"}, {"single", single}, {"pair", pair},
                        {"special_tokens", specials}};
}

// Control and user-defined tokens as added tokens matched whole in the text.
nlohmann::json AddedTokens(const std::vector<std::string>& tokens, const std::vector<int64_t>& types) {
  nlohmann::json added = nlohmann::json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (types[i] == kControlToken || types[i] == kUserDefinedToken) {
      added.push_back({{"id", i}, {"content", tokens[i]}, {"special", types[i] == kControlToken},
                       {"normalized", false}, {"lstrip", false}, {"rstrip", false}, {"single_word", false}});
    }
  }
  return added;
}

// A SentencePiece Unigram vocabulary (tokenizer.ggml.model "t5": what
// llama.cpp's converter writes for XLM-RoBERTa models, bge-m3 and
// multilingual-e5 among them) read as transformers' XLMRobertaTokenizer
// builds it: the pieces and their scores, the normalizer's precompiled
// charsmap, Metaspace with the prefix add_space_prefix asks for, and, where
// remove_extra_whitespaces is set (SentencePiece's own switch: leading,
// trailing and repeated whitespace dropped), a whitespace split before it.
// So "  a  b  " reads as "▁a▁b", as SentencePiece, transformers (the
// tokenizer sentence-transformers runs) and llama.cpp read it; a model
// directory's tokenizer.json (Replace " {2,}" -> " ", kept by Hugging Face
// tokenizers and TEI) keeps a final "▁" there.
absl::StatusOr<std::unique_ptr<EncoderTokenizer>> UnigramFromGguf(const GgufFile& g,
                                                                  const std::vector<std::string>& tokens) {
  ASSIGN_OR_RETURN(std::vector<int64_t> types, TokenTypes(g, tokens.size()));
  ASSIGN_OR_RETURN(const std::vector<double>* scores, g.GetFloatArray("tokenizer.ggml.scores"));
  if (scores->size() != tokens.size()) {
    return absl::InvalidArgumentError(absl::StrCat(g.where(), ": tokenizer.ggml.scores has ", scores->size(),
                                                   " entries for ", tokens.size(), " tokens"));
  }
  ASSIGN_OR_RETURN(int64_t unk, g.GetInt("tokenizer.ggml.unknown_token_id"));
  if (unk < 0 || unk >= static_cast<int64_t>(tokens.size())) {
    return absl::InvalidArgumentError(absl::StrCat(g.where(), ": tokenizer.ggml.unknown_token_id ", unk,
                                                   " is not below the vocabulary's ", tokens.size(), " tokens"));
  }
  nlohmann::json vocab = nlohmann::json::array();
  for (size_t i = 0; i < tokens.size(); ++i) vocab.push_back({tokens[i], (*scores)[i]});
  nlohmann::json normalizers = nlohmann::json::array();  // empty: none
  if (g.Find("tokenizer.ggml.precompiled_charsmap") != nullptr) {
    ASSIGN_OR_RETURN(const std::vector<int64_t>* charsmap, g.GetIntArray("tokenizer.ggml.precompiled_charsmap"));
    std::string bytes;
    bytes.reserve(charsmap->size());
    for (int64_t b : *charsmap) bytes.push_back(static_cast<char>(static_cast<uint8_t>(b)));
    normalizers.push_back({{"type", "Precompiled"}, {"precompiled_charsmap", absl::Base64Escape(bytes)}});
  }
  ASSIGN_OR_RETURN(bool extra_ws, g.GetBoolOr("tokenizer.ggml.remove_extra_whitespaces", true));
  ASSIGN_OR_RETURN(bool prefix, g.GetBoolOr("tokenizer.ggml.add_space_prefix", true));
  const nlohmann::json metaspace = {{"type", "Metaspace"}, {"replacement", "\xE2\x96\x81"},
                                    {"prepend_scheme", prefix ? "always" : "never"}, {"split", true}};
  nlohmann::json j = nlohmann::json::object();
  j["model"] = {{"type", "Unigram"}, {"unk_id", unk}, {"vocab", std::move(vocab)}, {"byte_fallback", false}};
  j["added_tokens"] = AddedTokens(tokens, types);
  j["normalizer"] = {{"type", "Sequence"}, {"normalizers", std::move(normalizers)}};
  j["pre_tokenizer"] = extra_ws ? nlohmann::json{{"type", "Sequence"},
                                                 {"pretokenizers", {{{"type", "WhitespaceSplit"}}, metaspace}}}
                                : metaspace;
  j["decoder"] = metaspace;
  ASSIGN_OR_RETURN(j["post_processor"], SpecialTemplate(g, tokens));
  ASSIGN_OR_RETURN(std::unique_ptr<UnigramTokenizer> t, UnigramTokenizer::FromJson(j, g.where()));
  return std::unique_ptr<EncoderTokenizer>(std::move(t));
}

}  // namespace

absl::StatusOr<std::unique_ptr<EncoderTokenizer>> EncoderTokenizerFromGguf(const GgufFile& g) {
  ASSIGN_OR_RETURN(std::string model, g.GetString("tokenizer.ggml.model"));
  ASSIGN_OR_RETURN(const std::vector<std::string>* tokens, g.GetStringArray("tokenizer.ggml.tokens"));
  if (model == "bert") return WordPieceFromGguf(g, *tokens);
  if (model == "t5") return UnigramFromGguf(g, *tokens);
  if (model != "gpt2") {
    return absl::UnimplementedError(absl::StrCat(g.where(), ": tokenizer.ggml.model '", model,
                                                 "' is not supported for embeddings (gpt2: byte-level BPE; bert: "
                                                 "WordPiece; t5: SentencePiece Unigram)"));
  }
  ASSIGN_OR_RETURN(const std::vector<std::string>* merges, g.GetStringArray("tokenizer.ggml.merges"));
  ASSIGN_OR_RETURN(std::vector<int64_t> types, TokenTypes(g, tokens->size()));
  ASSIGN_OR_RETURN(std::string pre, g.GetStringOr("tokenizer.ggml.pre", "default"));
  const std::optional<PretokenizerKind> kind = PretokenizerFromGgufPre(pre);
  if (!kind.has_value() || *kind == PretokenizerKind::kSmolLM) {
    return absl::UnimplementedError(absl::StrCat(g.where(), ": tokenizer.ggml.pre '", pre,
                                                 "' is not supported for embeddings (gpt-2, roberta-bpe, llama-bpe, "
                                                 "qwen2)"));
  }

  nlohmann::json j = nlohmann::json::object();
  nlohmann::json vocab = nlohmann::json::object();
  for (size_t i = 0; i < tokens->size(); ++i) vocab[(*tokens)[i]] = i;
  j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", *merges}, {"fuse_unk", false},
                {"byte_fallback", false}, {"ignore_merges", false}};
  j["added_tokens"] = AddedTokens(*tokens, types);
  j["normalizer"] = nullptr;
  if (*kind == PretokenizerKind::kGpt2) {
    j["pre_tokenizer"] = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
  } else {
    j["pre_tokenizer"] = {
        {"type", "Sequence"},
        {"pretokenizers",
         {{{"type", "Split"}, {"pattern", {{"Regex", PretokenizerRegex(*kind)}}}, {"behavior", "Isolated"},
           {"invert", false}},
          {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", false}}}}};
  }
  j["decoder"] = {{"type", "ByteLevel"}};
  ASSIGN_OR_RETURN(j["post_processor"], SpecialTemplate(g, *tokens));
  ASSIGN_OR_RETURN(std::unique_ptr<ByteLevelBpeEncoder> t, ByteLevelBpeEncoder::FromJson(j, g.where()));
  return std::unique_ptr<EncoderTokenizer>(std::move(t));
}

}  // namespace attnserve
