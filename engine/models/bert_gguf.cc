#include "engine/models/bert_gguf.h"

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/formats/ggml_dequantize.h"

namespace attnserve {
namespace {

// gguf-py's TensorNameMap for MODEL_ARCH.BERT, read backwards: a layer's
// GGUF name (after "blk.N.") and the Hugging Face name (after
// "encoder.layer.N.") it was written from.
constexpr std::pair<const char*, const char*> kLayerTensors[] = {
    {"attn_q", "attention.self.query"},
    {"attn_k", "attention.self.key"},
    {"attn_v", "attention.self.value"},
    {"attn_output", "attention.output.dense"},
    {"attn_output_norm", "attention.output.LayerNorm"},
    {"ffn_up", "intermediate.dense"},
    {"ffn_down", "output.dense"},
    {"layer_output_norm", "output.LayerNorm"},
};
struct ModelTensor {
  const char* gguf;
  const char* hf;
  bool required;  // DistilBERT's conversions have no token-type table
};
constexpr ModelTensor kModelTensors[] = {
    {"token_embd.weight", "embeddings.word_embeddings.weight", true},
    {"position_embd.weight", "embeddings.position_embeddings.weight", true},
    {"token_types.weight", "embeddings.token_type_embeddings.weight", false},
    {"token_embd_norm.weight", "embeddings.LayerNorm.weight", true},
    {"token_embd_norm.bias", "embeddings.LayerNorm.bias", true},
};

absl::StatusOr<int> PositiveKey(const GgufFile& g, const std::string& key) {
  ASSIGN_OR_RETURN(int64_t v, g.GetInt(key));
  if (v < 1 || v > (int64_t{1} << 24)) {
    return absl::InvalidArgumentError(absl::StrCat(g.where(), ": ", key, " ", v, " is outside [1, 2^24]"));
  }
  return static_cast<int>(v);
}

// The tensor's rows (its row-major first dimension); INVALID_ARGUMENT naming
// it unless it is a [rows, width] matrix.
absl::StatusOr<int> TableRows(const GgufFile& g, const GgufTensorInfo& t, int width) {
  if (t.shape.size() != 2 || t.shape[1] != width || t.shape[0] < 1) {
    return absl::InvalidArgumentError(absl::StrCat(g.where(), ": tensor '", t.name, "' has shape ",
                                                   ShapeString(t.shape), "; bert.embedding_length is ", width));
  }
  return static_cast<int>(t.shape[0]);
}

// The file's tensors gathered as views under Hugging Face names, into the
// archive BertEncoder::Load reads. F32 / F16 / BF16 / Q8_0 tensors are
// viewed where they lie in the mapping; other block types are dequantised
// to f32 here and kept with the file by the archive.
class HfViews {
 public:
  explicit HfViews(std::shared_ptr<const GgufFile> gguf) : owner_(std::make_shared<Owner>()) {
    owner_->gguf = std::move(gguf);
  }

  // INVALID_ARGUMENT naming the tensor when a `required` one is missing.
  // `part` of `parts` (> 1): that share of the tensor's rows (a fused
  // query/key/value projection's third), as a [rows / parts, ...] tensor.
  absl::Status Add(const std::string& gguf_name, const std::string& hf_name, bool required, int part = 0,
                   int parts = 1) {
    const GgufFile& g = *owner_->gguf;
    const GgufTensorInfo* t = g.FindTensor(gguf_name);
    if (t == nullptr) {
      if (!required) return absl::OkStatus();
      return absl::InvalidArgumentError(absl::StrCat(g.where(), ": tensor '", gguf_name, "' is missing"));
    }
    SafetensorsTensor v;
    v.name = hf_name;
    v.shape = t->shape;
    // Errors name the Hugging Face tensor; the file's own name goes with the file.
    v.file = absl::StrCat(g.where(), " (", gguf_name, ")");
    v.dtype_name = GgmlTypeName(t->type);
    switch (t->type) {
      case GgmlType::kF32: v.dtype = DType::kF32; break;
      case GgmlType::kF16: v.dtype = DType::kF16; break;
      case GgmlType::kBF16: v.dtype = DType::kBF16; break;
      case GgmlType::kQ8_0: v.dtype = DType::kQ8_0; break;
      default: break;
    }
    if (v.dtype.has_value()) {
      v.data = t->data;
    } else {
      // Expanded once, whichever parts of it are asked for. LoadTensor
      // names the type when it cannot be dequantised.
      auto it = owner_->expanded.find(gguf_name);
      if (it == owner_->expanded.end()) {
        ASSIGN_OR_RETURN(Tensor f32, g.LoadTensor(t->name, DType::kF32));
        it = owner_->expanded.emplace(gguf_name, std::move(f32)).first;
      }
      v.dtype = DType::kF32;
      v.data = absl::Span<const std::byte>(static_cast<const std::byte*>(it->second.raw()), it->second.bytes());
    }
    ASSIGN_OR_RETURN(SafetensorsTensor block, RowBlock(std::move(v), part, parts));
    views_.push_back(std::move(block));
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<SafetensorsArchive>> Finish() && {
    const std::string where = owner_->gguf->where();
    return SafetensorsArchive::FromTensors(where, std::move(views_), std::move(owner_));
  }

 private:
  // What the views need alive: the file and the expansions.
  struct Owner {
    std::shared_ptr<const GgufFile> gguf;
    std::map<std::string, Tensor> expanded;  // by GGUF tensor name
  };
  std::shared_ptr<Owner> owner_;
  std::vector<SafetensorsTensor> views_;
};

// A sequence classifier's head (a reranker's: bge-reranker-v2-m3's file):
// cls [D, D] and cls.output [labels, D] with biases, run as
// RobertaClassificationHead as llama.cpp runs them; the labels from
// bert.classifier.output_labels (a one-score reranker's file may have none:
// one label per cls.output row, LABEL_i). A cls.output without cls (a
// BertForSequenceClassification file: the converter drops BERT's pooler,
// which the model's scores go through) is refused.
absl::Status ReadClassifier(const GgufFile& g, HfViews& views, BertConfig& c) {
  const GgufTensorInfo* out = g.FindTensor("cls.output.weight");
  if (out == nullptr) return absl::OkStatus();
  if (g.FindTensor("cls.weight") == nullptr) {
    return absl::UnimplementedError(absl::StrCat(
        g.where(), ": tensor 'cls.output.weight' without 'cls.weight': a BERT classifier converted without its "
                   "pooler (llama.cpp's converter drops it), whose scores cannot be the model's"));
  }
  if (out->shape.size() != 2 || out->shape[1] != c.hidden_size || out->shape[0] < 1) {
    return absl::InvalidArgumentError(absl::StrCat(g.where(), ": tensor 'cls.output.weight' has shape ",
                                                   ShapeString(out->shape), "; bert.embedding_length is ",
                                                   c.hidden_size));
  }
  for (const char* suffix : {".weight", ".bias"}) {
    RETURN_IF_ERROR(views.Add(absl::StrCat("cls", suffix), absl::StrCat("classifier.dense", suffix), true));
    RETURN_IF_ERROR(
        views.Add(absl::StrCat("cls.output", suffix), absl::StrCat("classifier.out_proj", suffix), true));
  }
  if (g.Find("bert.classifier.output_labels") != nullptr) {
    ASSIGN_OR_RETURN(const std::vector<std::string>* labels, g.GetStringArray("bert.classifier.output_labels"));
    c.labels = *labels;
  } else {
    for (int64_t i = 0; i < out->shape[0]; ++i) c.labels.push_back(absl::StrCat("LABEL_", i));
  }
  if (static_cast<int64_t>(c.labels.size()) != out->shape[0]) {
    return absl::InvalidArgumentError(absl::StrCat(g.where(), ": bert.classifier.output_labels names ",
                                                   c.labels.size(), " labels but cls.output.weight has ",
                                                   out->shape[0], " rows"));
  }
  c.roberta_classifier_head = true;
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<BertGguf> ReadBertGguf(std::shared_ptr<const GgufFile> gguf) {
  const GgufFile& g = *gguf;
  ASSIGN_OR_RETURN(const std::string arch, g.GetString("general.architecture"));
  if (arch != "bert" && arch != "nomic-bert" && arch != "jina-bert-v2") {
    return absl::InvalidArgumentError(
        absl::StrCat(g.where(), ": general.architecture '", arch, "' is not bert, nomic-bert or jina-bert-v2"));
  }
  const bool nomic = arch == "nomic-bert";
  const bool jina = arch == "jina-bert-v2";
  bool jina_fused_up = false;
  const std::string k = arch + ".";
  BertGguf out;
  BertConfig& c = out.config;
  c.family = EncoderFamily::kBert;
  ASSIGN_OR_RETURN(c.hidden_size, PositiveKey(g, k + "embedding_length"));
  ASSIGN_OR_RETURN(c.num_layers, PositiveKey(g, k + "block_count"));
  ASSIGN_OR_RETURN(c.num_heads, PositiveKey(g, k + "attention.head_count"));
  ASSIGN_OR_RETURN(c.intermediate_size, PositiveKey(g, k + "feed_forward_length"));
  ASSIGN_OR_RETURN(double eps, g.GetFloatOr(k + "attention.layer_norm_epsilon", 1e-12));
  ASSIGN_OR_RETURN(bool causal, g.GetBoolOr(k + "attention.causal", false));
  if (c.hidden_size % c.num_heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat(g.where(), ": ", k, "embedding_length ", c.hidden_size,
                                                   " is not a multiple of ", k, "attention.head_count ",
                                                   c.num_heads));
  }
  if (!(eps > 0 && eps < 1)) {
    return absl::InvalidArgumentError(
        absl::StrCat(g.where(), ": ", k, "attention.layer_norm_epsilon ", eps, " is outside (0, 1)"));
  }
  if (causal) {
    return absl::InvalidArgumentError(
        absl::StrCat(g.where(), ": ", k, "attention.causal is true; a BERT encoder attends both ways"));
  }
  c.layer_norm_eps = static_cast<float>(eps);
  if (nomic) {
    // nomic-embed-text: rotary positions up to the trained context, SwiGLU,
    // a fused query/key/value projection, no projection biases.
    ASSIGN_OR_RETURN(c.max_positions, PositiveKey(g, k + "context_length"));
    ASSIGN_OR_RETURN(double theta, g.GetFloatOr(k + "rope.freq_base", 10000));
    if (!(theta > 1)) {
      return absl::InvalidArgumentError(absl::StrCat(g.where(), ": ", k, "rope.freq_base ", theta, " is not > 1"));
    }
    c.rotary_theta = static_cast<float>(theta);
    c.gate_activation = Activation::kSilu;  // SwiGLU
    c.projection_bias = false;
    for (const char* bias : {"blk.0.attn_qkv.bias", "blk.0.attn_output.bias", "blk.0.ffn_up.bias"}) {
      if (g.FindTensor(bias) != nullptr) {
        return absl::UnimplementedError(absl::StrCat(
            g.where(), ": tensor '", bias, "': a nomic-bert file with projection biases (nomic-embed-text has none) "
                       "is not read"));
      }
    }
  } else if (jina) {
    // jina-embeddings-v2: ALiBi (no position table) and GeGLU, the
    // converter's ffn_gate being gated_layers' first half, ffn_up its
    // second. The model's GELU is the erf form (llama.cpp runs tanh's).
    ASSIGN_OR_RETURN(c.max_positions, PositiveKey(g, k + "context_length"));
    c.alibi = true;
    c.gate_activation = Activation::kGeluErf;
    for (const char* name : {"blk.0.attn_q_norm.weight", "blk.0.attn_norm_2.weight"}) {
      if (g.FindTensor(name) != nullptr) {
        return absl::UnimplementedError(absl::StrCat(
            g.where(), ": tensor '", name, "': jina-bert-v2's query/key-normed layers (jina-embeddings-v2-base-code) "
                       "are not read"));
      }
    }
    // Older conversions split gated_layers into ffn_gate and ffn_up; the
    // current converter writes it whole as ffn_up [2I] (llama.cpp's GEGLU:
    // gelu of the first half times the second).
    jina_fused_up = g.FindTensor("blk.0.ffn_gate.weight") == nullptr;
  } else if (g.FindTensor("blk.0.attn_qkv.weight") != nullptr) {
    return absl::UnimplementedError(absl::StrCat(
        g.where(), ": tensor 'blk.0.attn_qkv.weight' (a fused query/key/value projection) is not read in a bert "
                   "file; this loader reads attn_q, attn_k and attn_v"));
  }

  HfViews views(gguf);
  for (const ModelTensor& t : kModelTensors) {
    if ((nomic || jina) && std::string(t.gguf) == "position_embd.weight") continue;  // rotary, ALiBi
    RETURN_IF_ERROR(views.Add(t.gguf, t.hf, t.required));
  }
  for (int i = 0; i < c.num_layers; ++i) {
    const std::string blk = absl::StrCat("blk.", i, ".");
    const std::string hf = absl::StrCat("encoder.layer.", i, ".");
    for (const auto& [gguf_name, hf_name] : kLayerTensors) {
      const std::string name(gguf_name);
      const bool projection = name != "attn_output_norm" && name != "layer_output_norm";
      if (nomic && (name == "attn_q" || name == "attn_k" || name == "attn_v")) {
        const int part = name == "attn_q" ? 0 : name == "attn_k" ? 1 : 2;
        RETURN_IF_ERROR(views.Add(blk + "attn_qkv.weight", hf + hf_name + ".weight", true, part, 3));
        continue;
      }
      if (jina_fused_up && name == "ffn_up") {
        RETURN_IF_ERROR(views.Add(blk + "ffn_up.weight", hf + "intermediate.gate.weight", true, 0, 2));
        RETURN_IF_ERROR(views.Add(blk + "ffn_up.weight", hf + hf_name + ".weight", true, 1, 2));
        continue;
      }
      for (const char* suffix : {".weight", ".bias"}) {
        if (projection && !c.projection_bias && std::string(suffix) == ".bias") continue;
        // A gated feed-forward's up (and gate) have no bias.
        if (name == "ffn_up" && c.gated_mlp() && std::string(suffix) == ".bias") continue;
        RETURN_IF_ERROR(views.Add(blk + name + suffix, hf + hf_name + suffix, true));
      }
    }
    if (c.gated_mlp() && !jina_fused_up) {
      RETURN_IF_ERROR(views.Add(blk + "ffn_gate.weight", hf + "intermediate.gate.weight", true));
    }
  }
  RETURN_IF_ERROR(ReadClassifier(g, views, c));
  ASSIGN_OR_RETURN(c.vocab_size, TableRows(g, *g.FindTensor("token_embd.weight"), c.hidden_size));
  if (!nomic && !jina) {
    ASSIGN_OR_RETURN(c.max_positions, TableRows(g, *g.FindTensor("position_embd.weight"), c.hidden_size));
  }
  if (const GgufTensorInfo* types = g.FindTensor("token_types.weight")) {
    ASSIGN_OR_RETURN(c.type_vocab_size, TableRows(g, *types, c.hidden_size));
  } else {
    c.type_vocab_size = 0;
  }
  ASSIGN_OR_RETURN(out.weights, std::move(views).Finish());
  return out;
}

}  // namespace attnserve
