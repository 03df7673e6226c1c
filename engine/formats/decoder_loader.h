// LoadDecoder: the one entry point that turns a decoder model on disk into
// config + weights + tokenizer. `path` is either a Hugging Face directory
// (config.json + model.safetensors or model.safetensors.index.json +
// tokenizer.json, optionally tokenizer_config.json / chat_template.jinja
// for the chat template) or a llama.cpp GGUF v3 file (*.gguf; tokenizer from its
// metadata). Matrices are converted to `weight_dtype` (kF32, kBF16 or kQ8_0:
// decoder_weights.h) at load, a tensor at a time. Every failure names the
// file and the reason.
//
// LINKING: the implementation builds a tokenizer, so it lives in the
// tokenizers area library (engine/tokenizers/decoder_loader.cc): link
// attnserve_engine_tokenizers (or any later area). Declared here, next to
// the config and weights it returns.
#ifndef ATTNSERVE_ENGINE_FORMATS_DECODER_LOADER_H_
#define ATTNSERVE_ENGINE_FORMATS_DECODER_LOADER_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engine/core/tensor.h"
#include "engine/formats/decoder_config.h"
#include "engine/formats/decoder_weights.h"
#include "engine/tokenizers/tokenizer.h"

namespace attnserve {

struct LoadedDecoder {
  DecoderConfig config;
  DecoderWeights weights;
  std::unique_ptr<Tokenizer> tokenizer;
  std::string source;  // the path loaded from
  std::string format;  // "gguf" or "hf"
  // The model's chat template as Jinja source ("" if it has none): GGUF's
  // tokenizer.chat_template, or a Hugging Face directory's chat_template.jinja
  // or tokenizer_config.json "chat_template" (the one named "default" when
  // it is a list of named templates).
  std::string chat_template;
};

absl::StatusOr<LoadedDecoder> LoadDecoder(const std::string& path, DType weight_dtype);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_FORMATS_DECODER_LOADER_H_
