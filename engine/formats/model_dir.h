// A Hugging Face model directory opened for loading: config.json, the
// safetensors weights (single or sharded, memory-mapped), the paths of
// tokenizer.json (or vocab.txt and tokenizer_config.json), and the sentence-transformers extras when present
// (modules.json -> pooling config and a Normalize module,
// sentence_bert_config.json -> max_seq_length).
#ifndef ATTNSERVE_ENGINE_FORMATS_MODEL_DIR_H_
#define ATTNSERVE_ENGINE_FORMATS_MODEL_DIR_H_

#include <memory>
#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "engine/formats/hf_config.h"
#include "engine/formats/safetensors.h"

#include <map>
#include <vector>

namespace attnserve {

// A Dense module after the pooling (LaBSE, distiluse-base-multilingual,
// EmbeddingGemma): y = activation(W x + b), W [out_features, in_features],
// from its directory's model.safetensors ("linear.weight", "linear.bias").
struct SentenceTransformersDense {
  std::string dir;
  int in_features = 0;
  int out_features = 0;
  bool bias = true;
  bool tanh = false;  // activation_function Tanh; otherwise Identity
};

// What sentence-transformers adds on top of the transformer.
struct SentenceTransformersConfig {
  bool present = false;             // modules.json exists
  // Pooling from 1_Pooling/config.json: "mean", "cls", "max", "lasttoken",
  // "mean_sqrt_len_tokens", "weightedmean"; empty when there is no Pooling module.
  std::string pooling;
  bool normalize = false;           // a sentence_transformers.models.Normalize module follows
  std::vector<SentenceTransformersDense> dense;  // Dense modules, in order, between pooling and Normalize
  std::optional<int> max_seq_length;  // sentence_bert_config.json
  // 1_Pooling/config.json include_prompt: false means a prompt's tokens are
  // left out of the pooling (INSTRUCTOR-style models).
  bool pooling_include_prompt = true;
  // config_sentence_transformers.json: named prompts ("query" -> "query: ")
  // and the one sentence-transformers puts before every text by default
  // (empty: none).
  std::map<std::string, std::string> prompts;
  std::string default_prompt_name;
  // A SpladePooling module (a SparseEncoder: SPLADE over the masked-language
  // model's logits) and its 1_SpladePooling/config.json: pooling_strategy
  // "max" or "sum", activation_function "relu" or "log1p_relu".
  bool splade = false;
  std::string splade_pooling_strategy = "max";
  std::string splade_activation = "relu";
};

struct ModelDir {
  std::string dir;
  std::string name;                 // the directory's base name
  HfConfig config;
  std::unique_ptr<SafetensorsArchive> weights;
  std::string tokenizer_json;       // path; empty when the directory has none
  // Paths of vocab.txt and tokenizer_config.json (empty when absent): a
  // BERT checkpoint saved without tokenizer.json is read from these.
  std::string vocab_txt;
  std::string tokenizer_config;
  SentenceTransformersConfig sentence_transformers;
};

// Opens DIR. Every failure names the file and the reason.
absl::StatusOr<ModelDir> OpenModelDir(const std::string& dir);
// Just the sentence-transformers part (exposed for tests).
absl::StatusOr<SentenceTransformersConfig> ReadSentenceTransformersConfig(const std::string& dir);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_FORMATS_MODEL_DIR_H_
