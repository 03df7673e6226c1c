// A llama.cpp BERT GGUF file (general.architecture "bert": what
// convert_hf_to_gguf.py writes for BertModel, DistilBertModel and
// XLMRobertaModel, and ollama's all-minilm, mxbai-embed-large,
// snowflake-arctic-embed, bge-m3 files) read as the Hugging Face BERT it
// was converted from (an XLM-RoBERTa file's position table already cut past
// the padding id by the converter, so its positions count from 0 as BERT's): the hyper-parameters from the file's
// bert.* keys, its tensors under Hugging Face's names (token_embd ->
// embeddings.word_embeddings, blk.N.attn_q -> encoder.layer.N.attention.
// self.query, ...) so that BertEncoder::Load reads them as it reads a
// safetensors checkpoint. A file with a classification head (cls and
// cls.output: an XLM-RoBERTa reranker's, bge-reranker-v2-m3) is a
// cross-encoder whose head runs as RobertaClassificationHead, as llama.cpp
// runs it. F32 / F16 / BF16 / Q8_0 tensors are read from the
// mapping where they lie; other block types are dequantised to f32 at load.
#ifndef ATTNSERVE_ENGINE_MODELS_BERT_GGUF_H_
#define ATTNSERVE_ENGINE_MODELS_BERT_GGUF_H_

#include <memory>

#include "absl/status/statusor.h"
#include "engine/formats/gguf_file.h"
#include "engine/formats/safetensors.h"
#include "engine/models/bert_config.h"

namespace attnserve {

struct BertGguf {
  BertConfig config;
  // Hugging Face names; keeps the GGUF file mapped.
  std::unique_ptr<SafetensorsArchive> weights;
};

// INVALID_ARGUMENT naming the file and the key or tensor for a missing or
// inconsistent hyper-parameter, a causal file, a tensor of the wrong shape;
// UNIMPLEMENTED for a fused attn_qkv (jina-style) layer or a classifier
// without its pooler.
absl::StatusOr<BertGguf> ReadBertGguf(std::shared_ptr<const GgufFile> gguf);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_BERT_GGUF_H_
