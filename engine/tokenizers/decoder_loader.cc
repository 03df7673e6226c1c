// LoadDecoder (declared in engine/formats/decoder_loader.h). Lives in the
// tokenizers area because it builds the tokenizer as well.
#include "engine/formats/decoder_loader.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/formats/gguf_file.h"
#include "engine/formats/hf_config.h"
#include "engine/formats/safetensors.h"
#include "engine/tokenizers/tokenizer_factory.h"
#include "nlohmann/json.hpp"

namespace attnserve {
namespace {

// A small JSON file of a model directory, which must hold one object.
absl::StatusOr<nlohmann::json> ReadJsonObject(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  nlohmann::json doc = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return absl::InvalidArgumentError(absl::StrCat(file.string(), ": not a JSON object"));
  }
  return doc;
}

// A Hugging Face directory's chat template: chat_template.jinja (what
// transformers saves since 4.47), else tokenizer_config.json's
// "chat_template", a string or a list of {"name", "template"} (the one
// named "default"). Neither file: "". A file that is there but unreadable or
// malformed fails the load, naming it.
absl::StatusOr<std::string> HfChatTemplate(const std::filesystem::path& dir) {
  std::error_code ec;
  const std::filesystem::path jinja = dir / "chat_template.jinja";
  if (std::filesystem::exists(jinja, ec)) {
    std::ifstream in(jinja, std::ios::binary);
    std::stringstream text;
    text << in.rdbuf();
    if (!in.good() && !in.eof()) return absl::DataLossError(absl::StrCat(jinja.string(), ": cannot be read"));
    return text.str();
  }
  const std::filesystem::path config = dir / "tokenizer_config.json";
  if (!std::filesystem::exists(config, ec)) return std::string();
  ASSIGN_OR_RETURN(const nlohmann::json doc, ReadJsonObject(config));
  auto it = doc.find("chat_template");
  if (it == doc.end() || it->is_null()) return std::string();
  if (it->is_string()) return it->get<std::string>();
  if (it->is_array()) {
    for (const nlohmann::json& named : *it) {
      if (named.is_object() && named.value("name", "") == "default" && named.contains("template") &&
          named["template"].is_string()) {
        return named["template"].get<std::string>();
      }
    }
    return std::string();  // named templates for tools etc., none the default
  }
  return absl::InvalidArgumentError(
      absl::StrCat(config.string(), ": chat_template is neither a string nor a list of named templates"));
}

// generation_config.json's eos_token_id (an id or a list), which
// transformers' generate() and vLLM stop at: instruct models often list their
// end-of-turn token there and not in config.json (Llama-3-Instruct's
// <|eot_id|>, Gemma 3's <end_of_turn>). Added to config.eos_token_ids. No
// file: nothing; a malformed one fails the load, naming it.
absl::Status AddGenerationConfigEos(const std::filesystem::path& dir, DecoderConfig& config) {
  std::error_code ec;
  const std::filesystem::path file = dir / "generation_config.json";
  if (!std::filesystem::exists(file, ec)) return absl::OkStatus();
  ASSIGN_OR_RETURN(const nlohmann::json doc, ReadJsonObject(file));
  const auto it = doc.find("eos_token_id");
  if (it == doc.end() || it->is_null()) return absl::OkStatus();
  std::vector<nlohmann::json> ids = it->is_array() ? it->get<std::vector<nlohmann::json>>() : std::vector{*it};
  for (const nlohmann::json& id : ids) {
    if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= config.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(file.string(), ": eos_token_id ", id.dump(),
                                                     " is not a token id in [0, ", config.vocab_size, ")"));
    }
    const int v = id.get<int>();
    if (std::find(config.eos_token_ids.begin(), config.eos_token_ids.end(), v) == config.eos_token_ids.end()) {
      config.eos_token_ids.push_back(v);
    }
  }
  if (config.eos_token_id < 0 && !config.eos_token_ids.empty()) config.eos_token_id = config.eos_token_ids[0];
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<LoadedDecoder> LoadDecoder(const std::string& path, DType weight_dtype) {
  std::error_code ec;
  LoadedDecoder out;
  out.source = path;
  if (std::filesystem::is_directory(path, ec)) {
    out.format = "hf";
    ASSIGN_OR_RETURN(HfConfig hf, HfConfig::Read(path));
    ASSIGN_OR_RETURN(out.config, DecoderConfigFromHf(hf));
    RETURN_IF_ERROR(AddGenerationConfigEos(path, out.config));
    out.config.name = std::filesystem::path(path).filename().string();
    if (out.config.name.empty()) out.config.name = std::filesystem::path(path).parent_path().filename().string();
    ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsArchive> archive, SafetensorsArchive::OpenDirectory(path));
    ASSIGN_OR_RETURN(out.weights, LoadDecoderWeightsFromHf(*archive, out.config, weight_dtype));
    const std::string tok = (std::filesystem::path(path) / "tokenizer.json").string();
    if (!std::filesystem::exists(tok, ec)) {
      return absl::NotFoundError(absl::StrCat(path, ": no tokenizer.json in the model directory"));
    }
    ASSIGN_OR_RETURN(out.tokenizer, TokenizerFromHfJson(tok, out.config.bos_token_id, out.config.eos_token_id));
    ASSIGN_OR_RETURN(out.chat_template, HfChatTemplate(path));
  } else if (std::filesystem::is_regular_file(path, ec)) {
    out.format = "gguf";
    ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> g, GgufFile::Open(path));
    ASSIGN_OR_RETURN(out.config, DecoderConfigFromGguf(*g));
    ASSIGN_OR_RETURN(out.weights, LoadDecoderWeightsFromGguf(*g, out.config, weight_dtype));
    ASSIGN_OR_RETURN(out.tokenizer, TokenizerFromGguf(*g));
    ASSIGN_OR_RETURN(out.chat_template, g->GetStringOr("tokenizer.chat_template", ""));
  } else {
    return absl::NotFoundError(absl::StrCat(path, ": no such model file or directory"));
  }
  if (out.tokenizer->vocab_size() > out.config.vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(path, ": tokenizer has ", out.tokenizer->vocab_size(),
                                                   " tokens but the model's vocabulary is ", out.config.vocab_size));
  }
  return out;
}

}  // namespace attnserve
