// LoadDecoder (declared in engine/formats/decoder_loader.h). Lives in the
// tokenizers area because it builds the tokenizer as well.
#include "engine/formats/decoder_loader.h"

#include <filesystem>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/formats/gguf_file.h"
#include "engine/formats/hf_config.h"
#include "engine/formats/safetensors.h"
#include "engine/tokenizers/tokenizer_factory.h"

namespace attnserve {

absl::StatusOr<LoadedDecoder> LoadDecoder(const std::string& path, DType weight_dtype) {
  std::error_code ec;
  LoadedDecoder out;
  out.source = path;
  if (std::filesystem::is_directory(path, ec)) {
    out.format = "hf";
    ASSIGN_OR_RETURN(HfConfig hf, HfConfig::Read(path));
    ASSIGN_OR_RETURN(out.config, DecoderConfigFromHf(hf));
    out.config.name = std::filesystem::path(path).filename().string();
    if (out.config.name.empty()) out.config.name = std::filesystem::path(path).parent_path().filename().string();
    ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsArchive> archive, SafetensorsArchive::OpenDirectory(path));
    ASSIGN_OR_RETURN(out.weights, LoadDecoderWeightsFromHf(*archive, out.config, weight_dtype));
    const std::string tok = (std::filesystem::path(path) / "tokenizer.json").string();
    if (!std::filesystem::exists(tok, ec)) {
      return absl::NotFoundError(absl::StrCat(path, ": no tokenizer.json in the model directory"));
    }
    ASSIGN_OR_RETURN(out.tokenizer, TokenizerFromHfJson(tok, out.config.bos_token_id, out.config.eos_token_id));
  } else if (std::filesystem::is_regular_file(path, ec)) {
    out.format = "gguf";
    ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> g, GgufFile::Open(path));
    ASSIGN_OR_RETURN(out.config, DecoderConfigFromGguf(*g));
    ASSIGN_OR_RETURN(out.weights, LoadDecoderWeightsFromGguf(*g, out.config, weight_dtype));
    ASSIGN_OR_RETURN(out.tokenizer, TokenizerFromGguf(*g));
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
