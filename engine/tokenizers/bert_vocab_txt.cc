#include "engine/tokenizers/bert_vocab_txt.h"

#include <fstream>
#include <optional>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/formats/json_util.h"

namespace attnserve {

absl::StatusOr<nlohmann::json> BertTokenizerJsonFromVocab(const std::string& vocab_txt,
                                                          const std::string& tokenizer_config) {
  std::ifstream in(vocab_txt, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat(vocab_txt, ": cannot be read"));
  nlohmann::json vocab = nlohmann::json::object();
  std::string line;
  int64_t id = 0;
  while (std::getline(in, line)) {
    // transformers' load_vocab strips the newline only; a token may hold
    // other whitespace.
    vocab[line] = id++;
  }
  if (id == 0) return absl::InvalidArgumentError(absl::StrCat(vocab_txt, ": no tokens"));
  if (id > (1 << 24)) return absl::InvalidArgumentError(absl::StrCat(vocab_txt, ": more than 2^24 tokens"));

  nlohmann::json config = nlohmann::json::object();
  if (!tokenizer_config.empty()) {
    ASSIGN_OR_RETURN(config, ReadJsonFile(tokenizer_config));
    if (!config.is_object()) return absl::InvalidArgumentError(absl::StrCat(tokenizer_config, ": not a JSON object"));
  }
  const std::string config_name = tokenizer_config.empty() ? vocab_txt : tokenizer_config;
  auto flag = [&](const char* key, bool fallback) -> absl::StatusOr<nlohmann::json> {
    auto it = config.find(key);
    if (it == config.end() || it->is_null()) return nlohmann::json(fallback);
    if (!it->is_boolean()) return absl::InvalidArgumentError(absl::StrCat(config_name, ": ", key, " must be a bool"));
    return *it;
  };
  BertTokenizerSpec spec;
  ASSIGN_OR_RETURN(spec.lowercase, flag("do_lower_case", true));
  ASSIGN_OR_RETURN(spec.tokenize_chinese_chars, flag("tokenize_chinese_chars", true));
  if (auto it = config.find("strip_accents"); it != config.end() && !it->is_null()) {
    if (!it->is_boolean()) {
      return absl::InvalidArgumentError(absl::StrCat(config_name, ": strip_accents must be a bool or null"));
    }
    spec.strip_accents = *it;
  }
  // A special token as tokenizer_config.json names it: a string, or an
  // AddedToken object {"content": ...}; it must be in the vocabulary.
  auto special = [&](const char* key, const char* fallback) -> absl::StatusOr<std::pair<std::string, int64_t>> {
    std::string token = fallback;
    if (auto it = config.find(key); it != config.end() && !it->is_null()) {
      if (it->is_string()) {
        token = it->get<std::string>();
      } else if (it->is_object() && it->contains("content") && (*it)["content"].is_string()) {
        token = (*it)["content"].get<std::string>();
      } else {
        return absl::InvalidArgumentError(absl::StrCat(config_name, ": ", key, " must be a token"));
      }
    }
    auto v = vocab.find(token);
    if (v == vocab.end()) {
      return absl::InvalidArgumentError(absl::StrCat(vocab_txt, ": ", key, " \"", token, "\" is not in the vocabulary"));
    }
    return std::make_pair(token, v->get<int64_t>());
  };
  ASSIGN_OR_RETURN(spec.unk, special("unk_token", "[UNK]"));
  ASSIGN_OR_RETURN(spec.sep, special("sep_token", "[SEP]"));
  ASSIGN_OR_RETURN(spec.pad, special("pad_token", "[PAD]"));
  ASSIGN_OR_RETURN(spec.cls, special("cls_token", "[CLS]"));
  ASSIGN_OR_RETURN(spec.mask, special("mask_token", "[MASK]"));

  return BertTokenizerJson(std::move(vocab), spec);
}

nlohmann::json BertTokenizerJson(nlohmann::json vocab, const BertTokenizerSpec& spec) {
  nlohmann::json added = nlohmann::json::array();
  std::vector<std::pair<std::string, int64_t>> specials_in_text = {spec.pad, spec.unk, spec.cls, spec.sep, spec.mask};
  specials_in_text.insert(specials_in_text.end(), spec.extra_special.begin(), spec.extra_special.end());
  for (const auto& [token, token_id] : specials_in_text) {
    if (token_id < 0) continue;
    added.push_back({{"id", token_id}, {"content", token}, {"single_word", false}, {"lstrip", false},
                     {"rstrip", false}, {"normalized", false}, {"special", true}});
  }
  auto piece = [](const std::pair<std::string, int64_t>& t, int type_id) {
    return nlohmann::json{{"SpecialToken", {{"id", t.first}, {"type_id", type_id}}}};
  };
  auto sequence = [](const char* which, int type_id) {
    return nlohmann::json{{"Sequence", {{"id", which}, {"type_id", type_id}}}};
  };
  nlohmann::json specials = nlohmann::json::object();
  for (const auto& t : {spec.cls, spec.sep}) {
    specials[t.first] = {{"id", t.first}, {"ids", {t.second}}, {"tokens", {t.first}}};
  }
  return nlohmann::json{
      {"added_tokens", std::move(added)},
      {"normalizer",
       {{"type", "BertNormalizer"},
        {"clean_text", true},
        {"handle_chinese_chars", spec.tokenize_chinese_chars},
        {"strip_accents", spec.strip_accents},
        {"lowercase", spec.lowercase}}},
      {"pre_tokenizer", {{"type", "BertPreTokenizer"}}},
      {"post_processor",
       {{"type", "TemplateProcessing"},
        {"single", {piece(spec.cls, 0), sequence("A", 0), piece(spec.sep, 0)}},
        {"pair", {piece(spec.cls, 0), sequence("A", 0), piece(spec.sep, 0), sequence("B", 1), piece(spec.sep, 1)}},
        {"special_tokens", std::move(specials)}}},
      {"decoder", {{"type", "WordPiece"}, {"prefix", "##"}, {"cleanup", true}}},
      {"model",
       {{"type", "WordPiece"},
        {"unk_token", spec.unk.first},
        {"continuing_subword_prefix", "##"},
        {"max_input_chars_per_word", 100},
        {"vocab", std::move(vocab)}}}};
}

}  // namespace attnserve
