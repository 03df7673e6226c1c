#include "engine/tokenizers/gguf_encoder_tokenizer.h"

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/tokenizers/byte_level_bpe_encoder.h"
#include "engine/tokenizers/pretokenizer.h"

namespace attnserve {
namespace {

nlohmann::json SpecialItem(const std::string& token, int type_id) {
  return {{"SpecialToken", {{"id", token}, {"type_id", type_id}}}};
}

// tokenizer.ggml.<key>_token_id as a token string, or "" when absent or out of range.
absl::StatusOr<std::string> TokenOf(const GgufFile& g, const std::vector<std::string>& tokens, const char* key) {
  ASSIGN_OR_RETURN(int64_t id, g.GetIntOr(absl::StrCat("tokenizer.ggml.", key, "_token_id"), -1));
  if (id < 0 || id >= static_cast<int64_t>(tokens.size())) return std::string();
  return tokens[static_cast<size_t>(id)];
}

}  // namespace

absl::StatusOr<std::unique_ptr<EncoderTokenizer>> EncoderTokenizerFromGguf(const GgufFile& g) {
  ASSIGN_OR_RETURN(std::string model, g.GetString("tokenizer.ggml.model"));
  if (model != "gpt2") {
    return absl::UnimplementedError(absl::StrCat(g.where(), ": tokenizer.ggml.model '", model,
                                                 "' is not supported for embeddings (gpt2: byte-level BPE)"));
  }
  ASSIGN_OR_RETURN(const std::vector<std::string>* tokens, g.GetStringArray("tokenizer.ggml.tokens"));
  ASSIGN_OR_RETURN(const std::vector<std::string>* merges, g.GetStringArray("tokenizer.ggml.merges"));
  std::vector<int64_t> types(tokens->size(), 1);
  if (g.Find("tokenizer.ggml.token_type") != nullptr) {
    ASSIGN_OR_RETURN(const std::vector<int64_t>* t, g.GetIntArray("tokenizer.ggml.token_type"));
    if (t->size() != tokens->size()) {
      return absl::InvalidArgumentError(absl::StrCat(g.where(), ": tokenizer.ggml.token_type has ", t->size(),
                                                     " entries for ", tokens->size(), " tokens"));
    }
    types = *t;
  }
  ASSIGN_OR_RETURN(std::string pre, g.GetStringOr("tokenizer.ggml.pre", "default"));
  const std::optional<PretokenizerKind> kind = PretokenizerFromGgufPre(pre);
  if (!kind.has_value() || *kind == PretokenizerKind::kSmolLM) {
    return absl::UnimplementedError(absl::StrCat(g.where(), ": tokenizer.ggml.pre '", pre,
                                                 "' is not supported for embeddings (gpt-2, llama-bpe, qwen2)"));
  }

  nlohmann::json j = nlohmann::json::object();
  nlohmann::json vocab = nlohmann::json::object();
  nlohmann::json added = nlohmann::json::array();
  for (size_t i = 0; i < tokens->size(); ++i) {
    // Control (3) and user-defined (4) tokens are matched whole in the text.
    if (types[i] == 3 || types[i] == 4) {
      added.push_back({{"id", i}, {"content", (*tokens)[i]}, {"special", types[i] == 3}, {"normalized", false},
                       {"lstrip", false}, {"rstrip", false}, {"single_word", false}});
    }
    vocab[(*tokens)[i]] = i;
  }
  j["model"] = {{"type", "BPE"}, {"vocab", vocab}, {"merges", *merges}, {"fuse_unk", false},
                {"byte_fallback", false}, {"ignore_merges", false}};
  j["added_tokens"] = added;
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
  // llama.cpp's add_special: bos before and eos after the text when the file asks.
  ASSIGN_OR_RETURN(bool add_bos, g.GetBoolOr("tokenizer.ggml.add_bos_token", false));
  ASSIGN_OR_RETURN(bool add_eos, g.GetBoolOr("tokenizer.ggml.add_eos_token", false));
  ASSIGN_OR_RETURN(std::string bos, TokenOf(g, *tokens, "bos"));
  ASSIGN_OR_RETURN(std::string eos, TokenOf(g, *tokens, "eos"));
  nlohmann::json specials = nlohmann::json::object();
  nlohmann::json single = nlohmann::json::array(), pair = nlohmann::json::array();
  for (int type_id : {0, 1}) {
    nlohmann::json& list = type_id == 0 ? single : pair;
    if (add_bos && !bos.empty()) list.push_back(SpecialItem(bos, type_id));
    list.push_back({{"Sequence", {{"id", type_id == 0 ? "A" : "B"}, {"type_id", type_id}}}});
    if (add_eos && !eos.empty()) list.push_back(SpecialItem(eos, type_id));
  }
  for (const std::string& t : {bos, eos}) {
    if (!t.empty()) specials[t] = {{"id", t}, {"ids", {vocab[t]}}, {"tokens", {t}}};
  }
  nlohmann::json both = single;
  for (const nlohmann::json& item : pair) both.push_back(item);
  j["post_processor"] = {{"type", "TemplateProcessing"}, {"single", single}, {"pair", both},
                         {"special_tokens", specials}};
  ASSIGN_OR_RETURN(std::unique_ptr<ByteLevelBpeEncoder> t, ByteLevelBpeEncoder::FromJson(j, g.where()));
  return std::unique_ptr<EncoderTokenizer>(std::move(t));
}

}  // namespace attnserve
