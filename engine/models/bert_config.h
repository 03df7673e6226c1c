// BERT hyper-parameters from a Hugging Face config.json: model_type "bert",
// the RoBERTa family ("xlm-roberta", "roberta", "camembert"), which has
// BERT's layers and differs in two places: position ids start after the
// padding id (RoBERTa's create_position_ids_from_input_ids) and the
// sequence-classification head is RobertaClassificationHead; and MPNet
// ("mpnet": all-mpnet-base-v2, multi-qa-mpnet), RoBERTa's positions and head
// plus a relative position bias added to every layer's attention scores (T5's
// buckets, one table shared by the layers) and no token-type embeddings;
// and DistilBERT ("distilbert": the sst-2 sentiment classifier, msmarco- and
// multi-qa-distilbert embedders), BERT's layers under other names
// (transformer.layer.N.attention.q_lin, sa_layer_norm, ffn.lin1, ...) and
// config keys (dim, n_layers, n_heads, hidden_dim, activation), no
// token-type embeddings, and a pre_classifier + ReLU classification head;
// and ModernBERT (ModernBertConfig below); and Nomic BERT (nomic_bert.h);
// and DeBERTa-v2 (DebertaConfig below, deberta.h); and ELECTRA ("electra":
// the ms-marco-electra cross-encoders), BERT's layers under "electra." with
// embedding tables of their own width projected to the hidden size
// (embeddings_project) and ElectraClassificationHead (dense, GELU,
// out_proj on the first token).
#ifndef ATTNSERVE_ENGINE_MODELS_BERT_CONFIG_H_
#define ATTNSERVE_ENGINE_MODELS_BERT_CONFIG_H_

#include <cmath>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engine/formats/hf_config.h"
#include "engine/ops/activation.h"

namespace attnserve {

enum class EncoderFamily { kBert, kRoberta, kMpnet, kDistilBert, kModernBert, kDebertaV2, kElectra };

// ModernBERT's differences from BERT ("modernbert": ModernBERT-base,
// gte-modernbert, modernbert-embed): pre-norm layers (the first without its
// attention norm), biases only where the config asks, a fused Wqkv, rotary
// positions (no position table), local layers that attend to keys within
// `window` positions, a GeGLU feed-forward (Wi [2I, D]: gelu(first half) *
// second half, then Wo), and a final norm.
struct ModernBertConfig {
  std::vector<bool> global_layers;  // per layer: full attention (else local)
  float global_rope_theta = 160000.0f;
  float local_rope_theta = 10000.0f;
  int window = 64;                  // local_attention / 2: |query - key| <= window
  bool attention_bias = false;      // Wqkv, Wo
  bool mlp_bias = false;            // Wi, Wo
  bool norm_bias = false;           // every LayerNorm
  bool classifier_bias = false;     // the head's dense layer
  bool classifier_mean = false;     // classifier_pooling "mean" (else "cls")
};

// DeBERTa-v2's differences from BERT (deberta.h): disentangled attention
// over a table of 2 · span relative position embeddings, and the position
// table only with position_biased_input.
struct DebertaConfig {
  bool relative_attention = false;
  bool c2p = false;  // pos_att_type "c2p": query · key-projected positions
  bool p2c = false;  // pos_att_type "p2c": key · query-projected positions
  // > 0: relative positions in log buckets (make_log_bucket_position) of
  // this size; else exact, clamped to ±max_relative_positions.
  int position_buckets = 0;
  int max_relative_positions = 0;
  bool share_att_key = false;         // positions through key_proj / query_proj (else pos_*_proj)
  bool norm_rel_embeddings = false;   // norm_rel_ebd "layer_norm": encoder.LayerNorm over the table
  bool position_biased_input = true;  // a learned position table added to the embeddings
  // Relative distances one side: the table has 2 · span rows.
  int span() const { return position_buckets > 0 ? position_buckets : max_relative_positions; }
  // The scores' scale is 1 / sqrt(head_dim · scale_factor()).
  int scale_factor() const { return 1 + (c2p ? 1 : 0) + (p2c ? 1 : 0); }
  bool disentangled() const { return relative_attention && (c2p || p2c); }
};

struct BertConfig {
  EncoderFamily family = EncoderFamily::kBert;
  int hidden_size = 0;        // D
  int num_layers = 0;         // L
  int num_heads = 0;          // H; head_dim = D / H
  int intermediate_size = 0;  // feed-forward width
  int vocab_size = 0;
  int max_positions = 0;      // max_position_embeddings (rows of the position table)
  // RoBERTa: pad_token_id. Token t of a sequence has position
  // pad + (non-pad tokens up to and including t), a pad token position pad;
  // so a sequence holds at most max_positions - pad - 1 tokens. -1 for BERT
  // (position = index).
  int pad_token_id = -1;
  // ELECTRA: the embedding tables' (and their LayerNorm's) width, projected
  // to hidden_size by "embeddings_project" when it differs; 0: hidden_size.
  int embedding_size = 0;
  int embedding_width() const { return embedding_size > 0 ? embedding_size : hidden_size; }
  int type_vocab_size = 0;   // 0: no token-type embeddings (MPNet, DistilBERT); every token is segment 0
  // MPNet: relative_attention_num_buckets (32, the count transformers'
  // bucket function assumes); 0 for the others.
  int relative_attention_buckets = 0;
  float layer_norm_eps = 1e-12f;
  // BertForSequenceClassification / (XLM)RobertaForSequenceClassification /
  // MPNetForSequenceClassification / DistilBertForSequenceClassification
  // (a cross-encoder or classifier): its
  // labels in id order (config.json id2label, else num_labels as
  // "LABEL_<i>", else Hugging Face's default of two). Empty: a plain
  // encoder.
  std::vector<std::string> labels;
  // Rotary encoders on BERT's post-norm layers (Nomic BERT, llama.cpp's
  // "nomic-bert", GTE): rotary positions of this base (the GPT-NeoX
  // half-split pairing over the whole head) in place of a position table.
  // 0: BERT's learned positions.
  float rotary_theta = 0;
  // The inverse frequencies divided by this (GTE's fixed NTK scaling:
  // factor^(2 / head_dim) over a base already multiplied by factor); 1: none.
  float rotary_scale = 1;
  // JinaBERT (jina-embeddings-v2; jina_bert.h): ALiBi attention biases,
  // -slope_h · |i - j| with Press et al.'s slopes, in place of positions.
  bool alibi = false;
  // A gated feed-forward, down(act(gate x) * up x): "intermediate.dense" is
  // up, "intermediate.gate" gate, the two one [2I, D] GEMM without biases;
  // kSilu is SwiGLU (Nomic BERT), kGeluErf GeGLU (GTE). kNone: BERT's
  // GELU feed-forward.
  Activation gate_activation = Activation::kNone;
  bool gated_mlp() const { return gate_activation != Activation::kNone; }
  bool projection_bias = true;  // false: query/key/value, output and feed-forward projections have none
  // The classification head is RobertaClassificationHead (dense, tanh,
  // out_proj on the first token) whatever the family: a GGUF file's
  // cls / cls.output, which llama.cpp runs that way for every BERT-family
  // classifier.
  bool roberta_classifier_head = false;
  // Load the masked-language-model head (BertForMaskedLM /
  // DistilBertForMaskedLM) for SPLADE pooling; set by the model directory's
  // sentence-transformers SpladePooling module, not by config.json.
  bool masked_lm_head = false;
  ModernBertConfig modern;  // family kModernBert only
  DebertaConfig deberta;    // family kDebertaV2 only
  int head_dim() const { return hidden_size / num_heads; }
  // DeBERTa's attention scale, 1 / sqrt(head_dim · (1 + the position
  // terms)), whether or not the model has relative attention
  // (DisentangledSelfAttention's scale_factor).
  float deberta_scale() const {
    return 1.0f / std::sqrt(static_cast<float>(head_dim() * deberta.scale_factor()));
  }
  // Positions counted after the padding id (RoBERTa and MPNet).
  bool roberta_positions() const { return family == EncoderFamily::kRoberta || family == EncoderFamily::kMpnet; }
  // Whether the embeddings add a learned position table (not rotary, ALiBi
  // or DeBERTa's relative-only positions).
  bool learned_positions() const {
    return rotary_theta == 0 && !alibi && (family != EncoderFamily::kDebertaV2 || deberta.position_biased_input);
  }
  // The longest sequence the position table allows.
  int max_sequence_length() const {
    return roberta_positions() ? max_positions - pad_token_id - 1 : max_positions;
  }
};

// A *ForSequenceClassification config's labels in id order: id2label, else
// num_labels (default 2) as LABEL_0, LABEL_1, ... INVALID_ARGUMENT naming the
// file for a malformed id2label.
absl::StatusOr<std::vector<std::string>> SequenceClassificationLabels(const HfConfig& config);

// The sizes every encoder config has (hidden_size, num_hidden_layers,
// num_attention_heads, intermediate_size, vocab_size,
// max_position_embeddings), or with `distil` DistilBERT's names (dim,
// n_layers, n_heads, hidden_dim); errors name the file and the key.
absl::Status ReadBertSizes(const HfConfig& config, bool distil, BertConfig& c);

// OK when config.json's `key` is "gelu" or missing (the erf form:
// transformers' ACT2FN["gelu"], the only activation the encoder runs);
// else INVALID_ARGUMENT naming the file and the key.
absl::Status RequireGelu(const HfConfig& config, const std::string& key);

// transformers 5's single rope: rope_parameters.rope_theta (rope_type
// "default" only), else a top-level rope_theta, else `default_theta`;
// errors name the file and the key. (ModernBERT's are per layer type.)
absl::StatusOr<double> DefaultRopeTheta(const HfConfig& config, double default_theta);

// INVALID_ARGUMENT naming the architecture when config.json's is a
// sequence or token classifier, whose heads an embedding-only family
// (`what`) does not read.
absl::Status RefuseClassificationHeads(const HfConfig& config, const std::string& what);

// Validates every field (ranges, D % H == 0, hidden_act (DistilBERT:
// activation) "gelu", position_embedding_type "absolute", id2label keys
// 0..n-1); errors name config.json and the field as the file spells it.
absl::StatusOr<BertConfig> ParseBertConfig(const HfConfig& config);

}  // namespace attnserve

#endif  // ATTNSERVE_ENGINE_MODELS_BERT_CONFIG_H_
