#include "engine/tokenizers/tokenizer_factory.h"

#include <algorithm>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/formats/json_util.h"
#include "engine/tokenizers/bpe_model_json.h"
#include "engine/tokenizers/byte_level_bpe.h"
#include "engine/tokenizers/hf_sentencepiece_bpe.h"
#include "engine/tokenizers/metaspace.h"
#include "engine/tokenizers/sentencepiece_bpe.h"

namespace attnserve {
namespace {

absl::StatusOr<int32_t> GgufId(const GgufFile& g, const std::string& key, size_t n) {
  ASSIGN_OR_RETURN(int64_t v, g.GetIntOr(key, -1));
  // llama.cpp writes 0xFFFFFFFF (or -1) for "none".
  if (v < 0 || v == 0xFFFFFFFFll) return -1;
  if (v >= static_cast<int64_t>(n)) {
    return absl::InvalidArgumentError(absl::StrCat(g.where(), ": ", key, " = ", v, " is outside the vocabulary of ", n));
  }
  return static_cast<int32_t>(v);
}

absl::Status ReadGgufSpecials(const GgufFile& g, size_t n, bool add_bos_default, SpecialTokens* s) {
  ASSIGN_OR_RETURN(s->bos, GgufId(g, "tokenizer.ggml.bos_token_id", n));
  ASSIGN_OR_RETURN(s->eos, GgufId(g, "tokenizer.ggml.eos_token_id", n));
  ASSIGN_OR_RETURN(s->unk, GgufId(g, "tokenizer.ggml.unknown_token_id", n));
  ASSIGN_OR_RETURN(s->pad, GgufId(g, "tokenizer.ggml.padding_token_id", n));
  ASSIGN_OR_RETURN(s->add_bos_by_default, g.GetBoolOr("tokenizer.ggml.add_bos_token", add_bos_default));
  ASSIGN_OR_RETURN(s->add_eos_by_default, g.GetBoolOr("tokenizer.ggml.add_eos_token", false));
  return absl::OkStatus();
}

absl::StatusOr<std::vector<int64_t>> TokenTypes(const GgufFile& g, size_t n) {
  if (g.Find("tokenizer.ggml.token_type") == nullptr) return std::vector<int64_t>(n, 1);
  ASSIGN_OR_RETURN(const std::vector<int64_t>* types, g.GetIntArray("tokenizer.ggml.token_type"));
  if (types->size() != n) {
    return absl::InvalidArgumentError(absl::StrCat(g.where(), ": tokenizer.ggml.token_type has ", types->size(),
                                                   " entries for ", n, " tokens"));
  }
  for (int64_t t : *types) {
    if (t < 0 || t > 6) {
      return absl::InvalidArgumentError(absl::StrCat(g.where(), ": unknown token type ", t));
    }
  }
  return *types;
}

// ---- tokenizer.json helpers

absl::Status JsonError(const std::string& path, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(path, ": ", what));
}

// Finds the pre-tokenizer kind of a ByteLevel-based pre_tokenizer.
absl::StatusOr<PretokenizerKind> HfPretokenizer(const nlohmann::json& pt, const std::string& path) {
  if (!pt.is_object() || !pt.contains("type")) return JsonError(path, "pre_tokenizer is missing");
  const std::string type = pt["type"].is_string() ? pt["type"].get<std::string>() : "";
  if (type == "ByteLevel") {
    if (pt.value("add_prefix_space", false)) {
      return absl::UnimplementedError(absl::StrCat(path, ": ByteLevel add_prefix_space=true is not supported"));
    }
    if (!pt.value("use_regex", true)) return JsonError(path, "ByteLevel without a regex split is not supported");
    return PretokenizerKind::kGpt2;
  }
  if (type == "Sequence" && pt.contains("pretokenizers") && pt["pretokenizers"].is_array()) {
    const auto& seq = pt["pretokenizers"];
    if (seq.size() == 2 && seq[0].value("type", "") == "Digits" && seq[0].value("individual_digits", false) &&
        seq[1].value("type", "") == "ByteLevel" && seq[1].value("use_regex", true) &&
        !seq[1].value("add_prefix_space", false)) {
      return PretokenizerKind::kSmolLM;  // SmolLM / StarCoder style
    }
    if (seq.size() == 2 && seq[0].value("type", "") == "Split" && seq[1].value("type", "") == "ByteLevel") {
      const auto& pattern = seq[0]["pattern"];
      std::string regex;
      if (pattern.is_object() && pattern.contains("Regex") && pattern["Regex"].is_string()) {
        regex = pattern["Regex"].get<std::string>();
      }
      std::optional<PretokenizerKind> kind = PretokenizerFromRegex(regex);
      if (!kind) {
        return absl::UnimplementedError(absl::StrCat(path, ": pre-tokenizer regex is not one of the supported "
                                                           "(GPT-2, Llama-3, Qwen2): ", regex));
      }
      if (seq[0].value("behavior", "") != "Isolated") return JsonError(path, "Split behavior must be Isolated");
      return *kind;
    }
  }
  return absl::UnimplementedError(absl::StrCat(path, ": pre_tokenizer '", type, "' is not supported"));
}

// A byte-level file's normalizer: none, or NFC (Qwen2's), alone or as the
// one step of a Sequence; anything else would change the ids unseen.
absl::StatusOr<bool> ByteLevelNfc(const nlohmann::json& norm, const std::string& path) {
  if (norm.is_null()) return false;
  const std::string type = norm.is_object() ? norm.value("type", "") : "";
  if (type == "NFC") return true;
  if (type == "Sequence" && norm.contains("normalizers") && norm["normalizers"].is_array()) {
    const auto& steps = norm["normalizers"];
    if (steps.empty()) return false;
    if (steps.size() == 1 && steps[0].is_object() && steps[0].value("type", "") == "NFC") return true;
  }
  return absl::UnimplementedError(absl::StrCat(path, ": normalizer '", type,
                                               "' is not supported before a byte-level BPE (none or NFC)"));
}

// Looks for a TemplateProcessing (possibly inside a Sequence) and reports
// whether its single-sequence template starts / ends with a special token.
void HfTemplate(const nlohmann::json& pp, std::string* first_special, std::string* last_special) {
  if (!pp.is_object()) return;
  const std::string type = pp.value("type", "");
  if (type == "Sequence" && pp.contains("processors") && pp["processors"].is_array()) {
    for (const auto& p : pp["processors"]) HfTemplate(p, first_special, last_special);
    return;
  }
  if (type != "TemplateProcessing" || !pp.contains("single") || !pp["single"].is_array()) return;
  const auto& single = pp["single"];
  if (single.empty()) return;
  auto special_of = [](const nlohmann::json& item) -> std::string {
    if (item.is_object() && item.contains("SpecialToken") && item["SpecialToken"].is_object()) {
      return item["SpecialToken"].value("id", "");
    }
    return "";
  };
  *first_special = special_of(single.front());
  if (single.size() > 1) *last_special = special_of(single.back());
}

constexpr char kMetaspace[] = "\xE2\x96\x81";  // "▁"

bool IsSpaceToMetaspace(const nlohmann::json& n) {
  return n.is_object() && n.value("type", "") == "Replace" && n.contains("pattern") && n["pattern"].is_object() &&
         n["pattern"].value("String", "") == " " && n.value("content", "") == kMetaspace;
}
bool IsPrependMetaspace(const nlohmann::json& n) {
  return n.is_object() && n.value("type", "") == "Prepend" && n.value("prepend", "") == kMetaspace;
}

// Whether tokenizer.json is SentencePiece-style ("▁" for spaces, usually
// byte_fallback) rather than byte-level.
bool IsSentencePieceStyle(const nlohmann::json& j) {
  const nlohmann::json& model = j["model"];
  if (model.value("byte_fallback", false)) return true;
  const nlohmann::json pt = j.value("pre_tokenizer", nlohmann::json());
  if (pt.is_object() && pt.value("type", "") == "Metaspace") return true;
  const nlohmann::json norm = j.value("normalizer", nlohmann::json());
  if (IsSpaceToMetaspace(norm) || IsPrependMetaspace(norm)) return true;
  if (norm.is_object() && norm.contains("normalizers") && norm["normalizers"].is_array()) {
    for (const auto& n : norm["normalizers"]) {
      if (IsSpaceToMetaspace(n) || IsPrependMetaspace(n)) return true;
    }
  }
  return false;
}

// The normalizer, pre-tokenizer and decoder of a SentencePiece-style file.
absl::Status ReadSentencePiecePipeline(const nlohmann::json& j, const std::string& path, HfSentencePieceVocab* v) {
  const nlohmann::json norm = j.value("normalizer", nlohmann::json());
  if (!norm.is_null()) {
    std::vector<nlohmann::json> steps;
    if (norm.is_object() && norm.value("type", "") == "Sequence" && norm.contains("normalizers") &&
        norm["normalizers"].is_array()) {
      for (const auto& n : norm["normalizers"]) steps.push_back(n);
    } else {
      steps.push_back(norm);
    }
    for (const auto& n : steps) {
      if (IsPrependMetaspace(n)) {
        v->prepend_space = true;
      } else if (IsSpaceToMetaspace(n)) {
        v->replace_spaces = true;
      } else {
        return absl::UnimplementedError(absl::StrCat(
            path, ": normalizer step '", n.is_object() ? n.value("type", "?") : "?",
            "' is not supported for SentencePiece-style BPE (Prepend(\"\u2581\"), Replace(\" \", \"\u2581\"))"));
      }
    }
  }
  const nlohmann::json pt = j.value("pre_tokenizer", nlohmann::json());
  // Gemma's files split at " " (MergedWithPrevious) after a normalizer that
  // has already replaced every space with "▁": nothing is left to split.
  const bool split_on_replaced_spaces = v->replace_spaces && MetaspacePreTokenizer::IsSplitOnSpace(pt);
  if (!pt.is_null() && !split_on_replaced_spaces) {
    if (!pt.is_object() || pt.value("type", "") != "Metaspace") {
      return absl::UnimplementedError(absl::StrCat(
          path, ": pre_tokenizer '", pt.is_object() ? pt.value("type", "?") : "?",
          "' is not supported for SentencePiece-style BPE (none, Metaspace, or Split on \" \" after a Replace "
          "normalizer)"));
    }
    if (pt.value("replacement", "") != kMetaspace) return JsonError(path, "Metaspace replacement must be \"\u2581\"");
    v->metaspace = true;
    v->metaspace_split = pt.value("split", true);
    ASSIGN_OR_RETURN(v->metaspace_prepend, ReadPrependScheme(pt, path));
  }
  // Decoder: Sequence of Replace("▁", " "), ByteFallback, Fuse, Strip(" ", 1, 0)
  // (any subset in that spirit), or one Metaspace decoder.
  const nlohmann::json dec = j.value("decoder", nlohmann::json());
  v->strip_leading_space = false;
  std::vector<nlohmann::json> steps;
  if (dec.is_object() && dec.value("type", "") == "Sequence" && dec.contains("decoders") && dec["decoders"].is_array()) {
    for (const auto& d : dec["decoders"]) steps.push_back(d);
  } else if (!dec.is_null()) {
    steps.push_back(dec);
  }
  bool replaces = false;
  for (const auto& d : steps) {
    const std::string type = d.is_object() ? d.value("type", "") : "";
    if (type == "Replace" && d.contains("pattern") && d["pattern"].is_object() &&
        d["pattern"].value("String", "") == kMetaspace && d.value("content", "") == " ") {
      replaces = true;
    } else if (type == "ByteFallback" || type == "Fuse") {
      // Decode() always maps <0xNN> runs back to bytes and joins the pieces.
    } else if (type == "Strip" && d.value("content", "") == " " && d.value("stop", 0) == 0 &&
               d.value("start", 0) <= 1) {
      v->strip_leading_space = d.value("start", 0) == 1;
    } else if (type == "Metaspace" && d.value("replacement", "") == kMetaspace) {
      replaces = true;
      v->strip_leading_space = d.value("prepend_scheme", "always") != "never" && d.value("add_prefix_space", true);
    } else {
      return absl::UnimplementedError(absl::StrCat(path, ": decoder step '", type,
                                                   "' is not supported for SentencePiece-style BPE"));
    }
  }
  if (!replaces) return JsonError(path, "SentencePiece-style decoder must turn \"\u2581\" back into spaces");
  return absl::OkStatus();
}

// llama.cpp's Phi-3 token attributes (llama-vocab.cpp, keyed on the name):
// in a file whose general.name holds "phi-3" or "phi3" (lowercased), every
// control and user-defined token and </s> takes the whitespace after it
// (RSTRIP), except <unk>, <s> and <|endoftext|>, as Phi-3's tokenizer.json
// marks <|user|>, <|end|>, ... rstrip.
absl::Status SetLlamaCppPhi3Attributes(const GgufFile& g, SentencePieceVocab& v) {
  ASSIGN_OR_RETURN(std::string name, g.GetStringOr("general.name", ""));
  name = absl::AsciiStrToLower(name);
  if (!absl::StrContains(name, "phi-3") && !absl::StrContains(name, "phi3")) return absl::OkStatus();
  v.strip.assign(v.pieces.size(), 0);
  for (size_t i = 0; i < v.pieces.size(); ++i) {
    const std::string& p = v.pieces[i];
    const bool special = v.types[i] == SpTokenType::kControl || v.types[i] == SpTokenType::kUserDefined;
    if ((special || p == "</s>") && p != "<unk>" && p != "<s>" && p != "<|endoftext|>") {
      v.strip[i] = kAddedTokenRstrip;
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<std::unique_ptr<Tokenizer>> TokenizerFromGguf(const GgufFile& g) {
  ASSIGN_OR_RETURN(std::string model, g.GetString("tokenizer.ggml.model"));
  ASSIGN_OR_RETURN(const std::vector<std::string>* tokens, g.GetStringArray("tokenizer.ggml.tokens"));
  const size_t n = tokens->size();
  ASSIGN_OR_RETURN(std::vector<int64_t> types, TokenTypes(g, n));
  if (model == "llama") {
    SentencePieceVocab v;
    v.pieces = *tokens;
    if (g.Find("tokenizer.ggml.scores") != nullptr) {
      ASSIGN_OR_RETURN(const std::vector<double>* scores, g.GetFloatArray("tokenizer.ggml.scores"));
      if (scores->size() != n) {
        return absl::InvalidArgumentError(absl::StrCat(g.where(), ": tokenizer.ggml.scores has ", scores->size(),
                                                       " entries for ", n, " tokens"));
      }
      v.scores.assign(scores->begin(), scores->end());
    }
    for (int64_t t : types) v.types.push_back(static_cast<SpTokenType>(t == 0 ? 1 : t));
    RETURN_IF_ERROR(ReadGgufSpecials(g, n, /*add_bos_default=*/true, &v.special));
    ASSIGN_OR_RETURN(v.add_space_prefix, g.GetBoolOr("tokenizer.ggml.add_space_prefix", true));
    RETURN_IF_ERROR(SetLlamaCppPhi3Attributes(g, v));
    ASSIGN_OR_RETURN(auto t, SentencePieceBpe::Create(std::move(v), g.where()));
    return std::unique_ptr<Tokenizer>(std::move(t));
  }
  if (model == "gpt2") {
    ByteLevelVocab v;
    v.pieces = *tokens;
    ASSIGN_OR_RETURN(const std::vector<std::string>* merges, g.GetStringArray("tokenizer.ggml.merges"));
    for (const std::string& m : *merges) {
      size_t sp = m.find(' ', 1);
      if (sp == std::string::npos) {
        return absl::InvalidArgumentError(absl::StrCat(g.where(), ": merge '", m, "' is not two symbols"));
      }
      v.merges.emplace_back(m.substr(0, sp), m.substr(sp + 1));
    }
    for (size_t i = 0; i < n; ++i) {
      if (types[i] == 3 || types[i] == 4) {
        v.added.push_back({(*tokens)[i], static_cast<int32_t>(i), types[i] == 3, 0});
      }
    }
    ASSIGN_OR_RETURN(std::string pre, g.GetStringOr("tokenizer.ggml.pre", "default"));
    std::optional<PretokenizerKind> kind = PretokenizerFromGgufPre(pre);
    if (!kind) {
      return absl::UnimplementedError(absl::StrCat(g.where(), ": tokenizer.ggml.pre '", pre,
                                                   "' is not supported (gpt-2, llama-bpe, qwen2)"));
    }
    v.pretokenizer = *kind;
    RETURN_IF_ERROR(ReadGgufSpecials(g, n, /*add_bos_default=*/false, &v.special));
    ASSIGN_OR_RETURN(auto t, ByteLevelBpe::Create(std::move(v), g.where()));
    return std::unique_ptr<Tokenizer>(std::move(t));
  }
  return absl::UnimplementedError(absl::StrCat(g.where(), ": tokenizer.ggml.model '", model,
                                               "' is not supported (llama, gpt2)"));
}

absl::StatusOr<std::unique_ptr<Tokenizer>> TokenizerFromHfJson(const std::string& path, int bos_id, int eos_id) {
  ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(path));
  if (!j.is_object() || !j.contains("model") || !j["model"].is_object()) return JsonError(path, "no 'model' object");
  const nlohmann::json& model = j["model"];
  if (model.value("type", "") != "BPE") {
    return absl::UnimplementedError(absl::StrCat(path, ": model.type '", model.value("type", "?"),
                                                 "' is not supported by the decoder tokenizers (BPE)"));
  }
  const bool sentencepiece_style = IsSentencePieceStyle(j);
  ByteLevelVocab v;
  if (!sentencepiece_style) {
    ASSIGN_OR_RETURN(v.pretokenizer, HfPretokenizer(j.value("pre_tokenizer", nlohmann::json()), path));
    ASSIGN_OR_RETURN(v.nfc, ByteLevelNfc(j.value("normalizer", nlohmann::json()), path));
  }
  ASSIGN_OR_RETURN(v.pieces, ReadBpeVocab(model, path));
  size_t n = v.pieces.size();
  std::vector<nlohmann::json> added;
  if (j.contains("added_tokens") && j["added_tokens"].is_array()) {
    for (const auto& a : j["added_tokens"]) {
      if (!a.is_object() || !a.contains("id") || !a["id"].is_number_integer() || !a.contains("content") ||
          !a["content"].is_string() || a["id"].get<int64_t>() < 0 || a["id"].get<int64_t>() > (1 << 24)) {
        return JsonError(path, "added_tokens entries need an integer id and a string content");
      }
      n = std::max(n, static_cast<size_t>(a["id"].get<int64_t>()) + 1);
      added.push_back(a);
    }
  }
  v.pieces.resize(n);
  for (const auto& a : added) {
    const int32_t id = a["id"].get<int32_t>();
    v.pieces[id] = a["content"].get<std::string>();
    const uint8_t strip = (a.value("lstrip", false) ? kAddedTokenLstrip : 0) |
                          (a.value("rstrip", false) ? kAddedTokenRstrip : 0);
    v.added.push_back({v.pieces[id], id, a.value("special", false), strip});
    if (a.value("single_word", false)) {
      return absl::UnimplementedError(
          absl::StrCat(path, ": added token '", v.pieces[id], "' uses single_word, which is not supported"));
    }
  }
  ASSIGN_OR_RETURN(v.merges, ReadBpeMerges(model, path));
  std::string first, last;
  HfTemplate(j.value("post_processor", nlohmann::json()), &first, &last);
  auto id_of = [&](const std::string& content) -> int32_t {
    for (size_t i = 0; i < v.pieces.size(); ++i) {
      if (v.pieces[i] == content) return static_cast<int32_t>(i);
    }
    return -1;
  };
  v.special.bos = bos_id >= 0 && bos_id < static_cast<int>(n) ? bos_id : (first.empty() ? -1 : id_of(first));
  v.special.eos = eos_id >= 0 && eos_id < static_cast<int>(n) ? eos_id : (last.empty() ? -1 : id_of(last));
  v.special.add_bos_by_default = !first.empty();
  v.special.add_eos_by_default = !last.empty();
  if (model.contains("unk_token") && model["unk_token"].is_string()) v.special.unk = id_of(model["unk_token"]);
  if (sentencepiece_style) {
    HfSentencePieceVocab sp;
    RETURN_IF_ERROR(ReadSentencePiecePipeline(j, path, &sp));
    sp.pieces = std::move(v.pieces);
    sp.merges = std::move(v.merges);
    for (const auto& a : added) {
      const uint8_t strip = (a.value("lstrip", false) ? kAddedTokenLstrip : 0) |
                            (a.value("rstrip", false) ? kAddedTokenRstrip : 0);
      sp.added.push_back({a["content"].get<std::string>(), a["id"].get<int32_t>(), a.value("special", false),
                          a.value("normalized", !a.value("special", false)), strip});
    }
    sp.byte_fallback = model.value("byte_fallback", false);
    sp.fuse_unk = model.value("fuse_unk", false);
    sp.special = v.special;
    ASSIGN_OR_RETURN(auto t, HfSentencePieceBpe::Create(std::move(sp), path));
    return std::unique_ptr<Tokenizer>(std::move(t));
  }
  ASSIGN_OR_RETURN(auto t, ByteLevelBpe::Create(std::move(v), path));
  return std::unique_ptr<Tokenizer>(std::move(t));
}

}  // namespace attnserve
