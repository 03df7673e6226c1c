#include "engine/formats/model_dir.h"

#include <filesystem>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/formats/json_util.h"

namespace attnserve {
namespace fs = std::filesystem;

namespace {

absl::StatusOr<std::string> ReadPooling(const std::string& path, bool* include_prompt) {
  ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(path));
  if (!j.is_object()) return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  ASSIGN_OR_RETURN(std::optional<bool> include, JsonOptionalBool(j, "include_prompt", path));
  *include_prompt = include.value_or(true);
  // Newer sentence-transformers write "pooling_mode": "mean"; older ones one
  // boolean per mode. Exactly one mode must be on: combined poolings
  // (concatenated vectors) are not supported.
  ASSIGN_OR_RETURN(std::optional<std::string> mode, JsonOptionalString(j, "pooling_mode", path));
  if (mode.has_value()) {
    if (*mode == "mean" || *mode == "cls" || *mode == "max" || *mode == "lasttoken" ||
        *mode == "mean_sqrt_len_tokens" || *mode == "weightedmean") {
      return *mode;
    }
    return absl::InvalidArgumentError(absl::StrCat(path, ": unsupported pooling_mode \"", *mode, "\""));
  }
  const std::pair<const char*, const char*> kFlags[] = {
      {"pooling_mode_mean_tokens", "mean"},       {"pooling_mode_cls_token", "cls"},
      {"pooling_mode_max_tokens", "max"},         {"pooling_mode_lasttoken", "lasttoken"},
      {"pooling_mode_mean_sqrt_len_tokens", "mean_sqrt_len_tokens"},
      {"pooling_mode_weightedmean_tokens", "weightedmean"},
  };
  std::string found;
  for (const auto& [key, name] : kFlags) {
    ASSIGN_OR_RETURN(std::optional<bool> on, JsonOptionalBool(j, key, path));
    if (on.value_or(false)) {
      if (!found.empty()) {
        return absl::InvalidArgumentError(
            absl::StrCat(path, ": more than one pooling mode (", found, ", ", name, ") is not supported"));
      }
      found = name;
    }
  }
  if (found.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": no pooling mode enabled"));
  return found;
}

}  // namespace

// sentence-transformers' SpladePooling config; its chunk_size and
// embedding_dimension change nothing in the result.
absl::Status ReadSpladePooling(const std::string& path, SentenceTransformersConfig& st) {
  ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(path));
  if (!j.is_object()) return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  ASSIGN_OR_RETURN(std::optional<std::string> strategy, JsonOptionalString(j, "pooling_strategy", path));
  ASSIGN_OR_RETURN(std::optional<std::string> activation, JsonOptionalString(j, "activation_function", path));
  st.splade = true;
  st.splade_pooling_strategy = strategy.value_or("max");
  st.splade_activation = activation.value_or("relu");
  if (st.splade_pooling_strategy != "max" && st.splade_pooling_strategy != "sum") {
    return absl::InvalidArgumentError(absl::StrCat(path, ": pooling_strategy \"", st.splade_pooling_strategy,
                                                   "\" is not supported (max, sum)"));
  }
  if (st.splade_activation != "relu" && st.splade_activation != "log1p_relu") {
    return absl::InvalidArgumentError(absl::StrCat(path, ": activation_function \"", st.splade_activation,
                                                   "\" is not supported (relu, log1p_relu)"));
  }
  return absl::OkStatus();
}

// A Dense module's config.json (sentence-transformers' Dense.save).
absl::StatusOr<SentenceTransformersDense> ReadDense(const std::string& module_dir) {
  const std::string path = (fs::path(module_dir) / "config.json").string();
  ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(path));
  if (!j.is_object()) return absl::InvalidArgumentError(absl::StrCat(path, ": not a JSON object"));
  SentenceTransformersDense d;
  d.dir = module_dir;
  ASSIGN_OR_RETURN(int64_t in, JsonRequiredInt(j, "in_features", path, 1, 1 << 20));
  ASSIGN_OR_RETURN(int64_t out, JsonRequiredInt(j, "out_features", path, 1, 1 << 20));
  ASSIGN_OR_RETURN(std::optional<bool> bias, JsonOptionalBool(j, "bias", path));
  ASSIGN_OR_RETURN(std::optional<std::string> act, JsonOptionalString(j, "activation_function", path));
  d.in_features = static_cast<int>(in);
  d.out_features = static_cast<int>(out);
  d.bias = bias.value_or(true);
  const std::string a = act.value_or("torch.nn.modules.activation.Tanh");  // Dense's default
  if (a.ends_with(".Tanh")) {
    d.tanh = true;
  } else if (!a.ends_with(".Identity")) {
    return absl::InvalidArgumentError(
        absl::StrCat(path, ": activation_function \"", a, "\" is not supported (Identity, Tanh)"));
  }
  return d;
}

absl::StatusOr<SentenceTransformersConfig> ReadSentenceTransformersConfig(const std::string& dir) {
  SentenceTransformersConfig st;
  std::error_code ec;
  const std::string modules_path = (fs::path(dir) / "modules.json").string();
  if (fs::exists(modules_path, ec)) {
    st.present = true;
    ASSIGN_OR_RETURN(nlohmann::json modules, ReadJsonFile(modules_path));
    if (!modules.is_array()) return absl::InvalidArgumentError(absl::StrCat(modules_path, ": not a JSON array"));
    for (const nlohmann::json& m : modules) {
      ASSIGN_OR_RETURN(std::optional<std::string> type, JsonOptionalString(m, "type", modules_path));
      ASSIGN_OR_RETURN(std::optional<std::string> sub, JsonOptionalString(m, "path", modules_path));
      if (!type.has_value()) return absl::InvalidArgumentError(absl::StrCat(modules_path, ": module without \"type\""));
      if (type->ends_with(".Transformer") || type->ends_with(".MLMTransformer")) {
        // The model itself: config.json and the weights beside modules.json.
      } else if (type->ends_with(".Dense")) {
        if (!sub.has_value() || sub->empty() || sub->find("..") != std::string::npos) {
          return absl::InvalidArgumentError(absl::StrCat(modules_path, ": Dense module without a valid \"path\""));
        }
        if (st.pooling.empty() || st.normalize) {
          return absl::InvalidArgumentError(
              absl::StrCat(modules_path, ": a Dense module is read only between Pooling and Normalize"));
        }
        ASSIGN_OR_RETURN(SentenceTransformersDense dense, ReadDense((fs::path(dir) / *sub).string()));
        const int want_in = st.dense.empty() ? 0 : st.dense.back().out_features;
        if (want_in > 0 && dense.in_features != want_in) {
          return absl::InvalidArgumentError(absl::StrCat(dense.dir, "/config.json: in_features ", dense.in_features,
                                                         " but the module before gives ", want_in));
        }
        st.dense.push_back(std::move(dense));
      } else if (type->ends_with(".Pooling")) {
        if (!sub.has_value() || sub->find("..") != std::string::npos) {
          return absl::InvalidArgumentError(absl::StrCat(modules_path, ": Pooling module without a valid \"path\""));
        }
        ASSIGN_OR_RETURN(st.pooling,
                         ReadPooling((fs::path(dir) / *sub / "config.json").string(), &st.pooling_include_prompt));
      } else if (type->ends_with(".Normalize")) {
        st.normalize = true;
      } else if (type->ends_with(".SpladePooling")) {
        if (!sub.has_value() || sub->find("..") != std::string::npos) {
          return absl::InvalidArgumentError(
              absl::StrCat(modules_path, ": SpladePooling module without a valid \"path\""));
        }
        RETURN_IF_ERROR(ReadSpladePooling((fs::path(dir) / *sub / "config.json").string(), st));
      } else {
        // Served without it, the vectors would silently differ from the model's.
        return absl::InvalidArgumentError(absl::StrCat(
            modules_path, ": module ", *type,
            " is not supported (Transformer, Pooling, Dense, Normalize, MLMTransformer, SpladePooling)"));
      }
    }
  }
  const std::string sbert_path = (fs::path(dir) / "sentence_bert_config.json").string();
  if (fs::exists(sbert_path, ec)) {
    ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(sbert_path));
    ASSIGN_OR_RETURN(std::optional<int64_t> max_len, JsonOptionalInt(j, "max_seq_length", sbert_path));
    if (max_len.has_value()) {
      if (*max_len < 1 || *max_len > (1 << 20)) {
        return absl::InvalidArgumentError(absl::StrCat(sbert_path, ": max_seq_length ", *max_len, " out of range"));
      }
      st.max_seq_length = static_cast<int>(*max_len);
    }
  }
  const std::string prompts_path = (fs::path(dir) / "config_sentence_transformers.json").string();
  if (fs::exists(prompts_path, ec)) {
    ASSIGN_OR_RETURN(nlohmann::json j, ReadJsonFile(prompts_path));
    if (!j.is_object()) return absl::InvalidArgumentError(absl::StrCat(prompts_path, ": not a JSON object"));
    if (auto p = j.find("prompts"); p != j.end() && !p->is_null()) {
      if (!p->is_object()) return absl::InvalidArgumentError(absl::StrCat(prompts_path, ": prompts is not an object"));
      for (auto it = p->begin(); it != p->end(); ++it) {
        if (!it.value().is_string()) {
          return absl::InvalidArgumentError(absl::StrCat(prompts_path, ": prompts[\"", it.key(), "\"] is not a string"));
        }
        st.prompts[it.key()] = it.value().get<std::string>();
      }
    }
    // A SparseEncoder's max_active_dims keeps each embedding's largest
    // entries only; not applied here, so refused rather than ignored.
    if (auto dims = j.find("max_active_dims"); dims != j.end() && !dims->is_null()) {
      return absl::InvalidArgumentError(
          absl::StrCat(prompts_path, ": max_active_dims ", dims->dump(), " is not supported (null)"));
    }
    ASSIGN_OR_RETURN(std::optional<std::string> default_name,
                     JsonOptionalString(j, "default_prompt_name", prompts_path));
    if (default_name.has_value()) {
      if (!st.prompts.contains(*default_name)) {
        return absl::InvalidArgumentError(absl::StrCat(prompts_path, ": default_prompt_name \"", *default_name,
                                                       "\" is not one of the prompts"));
      }
      st.default_prompt_name = *default_name;
    }
  }
  return st;
}

absl::StatusOr<ModelDir> OpenModelDir(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return absl::NotFoundError(absl::StrCat(dir, ": not a directory"));
  ModelDir m;
  m.dir = dir;
  m.name = fs::path(dir).lexically_normal().filename().string();
  if (m.name.empty()) m.name = fs::path(dir).lexically_normal().parent_path().filename().string();
  ASSIGN_OR_RETURN(m.config, HfConfig::Read(dir));
  ASSIGN_OR_RETURN(m.weights, SafetensorsArchive::OpenDirectory(dir));
  const std::string tok = (fs::path(dir) / "tokenizer.json").string();
  if (fs::exists(tok, ec)) m.tokenizer_json = tok;
  for (auto [name, field] : {std::pair<const char*, std::string*>{"vocab.txt", &m.vocab_txt},
                             {"tokenizer_config.json", &m.tokenizer_config}}) {
    const std::string path = (fs::path(dir) / name).string();
    if (fs::exists(path, ec)) *field = path;
  }
  ASSIGN_OR_RETURN(m.sentence_transformers, ReadSentenceTransformersConfig(dir));
  return m;
}

}  // namespace attnserve
