#include "engine/models/encoder_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>

#include "absl/status/status.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engine/core/status_macros.h"
#include "engine/formats/decoder_config.h"
#include "engine/formats/decoder_loader.h"
#include "engine/formats/decoder_weights.h"
#include "engine/formats/gguf_file.h"
#include "engine/formats/model_dir.h"
#include "engine/formats/safetensors.h"
#include "engine/models/bert_config.h"
#include "engine/models/bert_gguf.h"
#include "engine/models/causal_forward.h"
#include "engine/models/gte.h"
#include "engine/models/jina_bert.h"
#include "engine/models/nomic_bert.h"
#include "engine/tokenizers/bert_vocab_txt.h"
#include "engine/tokenizers/gguf_encoder_tokenizer.h"
#include "engine/tokenizers/wordpiece.h"

namespace attnserve {

namespace {

// config.json model types read as decoder-based embedders.
bool IsCausalEmbedder(const std::string& model_type) {
  return model_type == "llama" || model_type == "mistral" || model_type == "qwen2" || model_type == "qwen3" ||
         model_type == "gemma3_text";  // EmbeddingGemma (bidirectional)
}

// transformers' *ForSequenceClassification over a decoder body (Qwen3,
// Qwen2, Llama, Mistral: rerankers converted to a score head, reward models,
// classifiers).
bool IsDecoderClassifier(const HfConfig& config) {
  for (const std::string& a : config.architectures()) {
    if (absl::EndsWith(a, "ForSequenceClassification")) return true;
  }
  return false;
}

// llama.cpp's encoder architectures other than "bert", "nomic-bert" and
// "jina-bert-v2": their layers differ from BERT's (mixtures of experts,
// LoRA adapters, pre-norm layers) and none is read.
bool IsUnreadBertGguf(const std::string& arch) {
  return arch == "nomic-bert-moe" || arch == "jina-bert-v3" || arch == "modern-bert" ||
         arch == "neo-bert" || arch == "eurobert";
}

// A packaged model often lives in ".../<package>/model": the parent names it.
std::string ModelName(const std::string& dir) {
  std::filesystem::path p = std::filesystem::path(dir).lexically_normal();
  if (p.filename().empty()) p = p.parent_path();
  return p.filename() == "model" && p.has_parent_path() ? p.parent_path().filename().string()
                                                        : p.filename().string();
}

}  // namespace

absl::StatusOr<std::unique_ptr<EncoderModel>> EncoderModel::Load(const std::string& dir,
                                                                 const EncoderLoadOptions& options) {
  std::error_code ec;
  if (std::filesystem::is_regular_file(dir, ec)) return LoadGguf(dir, options);
  ASSIGN_OR_RETURN(ModelDir md, OpenModelDir(dir));
  if (IsCausalEmbedder(md.config.model_type())) return LoadCausal(md, options);
  ASSIGN_OR_RETURN(BertConfig config, ParseBertConfig(md.config));
  const SentenceTransformersConfig& st = md.sentence_transformers;
  config.masked_lm_head = st.splade;
  std::unique_ptr<EncoderModel> m(new EncoderModel());
  if (!md.tokenizer_json.empty()) {
    ASSIGN_OR_RETURN(m->tokenizer_, LoadEncoderTokenizer(md.tokenizer_json));
  } else if (!md.vocab_txt.empty()) {
    // Older BERT checkpoints ship only the slow tokenizer's files.
    ASSIGN_OR_RETURN(nlohmann::json described, BertTokenizerJsonFromVocab(md.vocab_txt, md.tokenizer_config));
    ASSIGN_OR_RETURN(m->tokenizer_, WordPieceTokenizer::FromJson(described, md.vocab_txt));
  } else {
    return absl::NotFoundError(
        absl::StrCat(dir, ": no tokenizer.json or vocab.txt (the encoder needs its tokenizer)"));
  }
  if (m->tokenizer_->vocab_size() > config.vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(md.tokenizer_json.empty() ? md.vocab_txt : md.tokenizer_json,
                                                   ": tokenizer has ", m->tokenizer_->vocab_size(),
                                                   " tokens but config.json vocab_size is ", config.vocab_size));
  }
  // Nomic BERT's, GTE's and JinaBERT's checkpoints are read under BERT's names.
  std::unique_ptr<SafetensorsArchive> renamed;
  if (md.config.model_type() == "nomic_bert") {
    ASSIGN_OR_RETURN(renamed, NomicBertWeightsAsBert(*md.weights, config));
  } else if (IsGteModelType(md.config.model_type())) {
    ASSIGN_OR_RETURN(renamed, GteWeightsAsBert(*md.weights, config));
  } else if (config.alibi) {
    ASSIGN_OR_RETURN(renamed, JinaBertWeightsAsBert(*md.weights, config));
  }
  RETURN_IF_ERROR(m->AdoptBert(renamed ? *renamed : *md.weights, config, options, md.config.model_type()));
  RETURN_IF_ERROR(m->ReadSentenceTransformers(md, config.max_sequence_length(), config.hidden_size));
  if (st.splade) {
    m->default_pooling_ = PoolingMode::kSplade;
    m->splade_.sum = st.splade_pooling_strategy == "sum";
    m->splade_.double_log = st.splade_activation == "log1p_relu";
  }
  m->description_.name = ModelName(dir);
  m->description_.source = dir;
  return m;
}

absl::Status EncoderModel::AdoptBert(const SafetensorsArchive& weights, const BertConfig& config,
                                     const EncoderLoadOptions& options, const std::string& architecture) {
  ASSIGN_OR_RETURN(bert_, BertEncoder::Load(weights, config, options.weight_dtype, options.matmul_precision));
  if (options.prepare_kernels) RETURN_IF_ERROR(bert_->CreateAllPrimitives());
  hidden_size_ = config.hidden_size;
  num_layers_ = config.num_layers;
  num_heads_ = config.num_heads;
  vocab_size_ = config.vocab_size;
  // A BERT-family model without a token-type table (gte-base-en-v1.5's)
  // ignores the tokenizer's segments, as its Hugging Face code does.
  reads_segments_ = (config.family == EncoderFamily::kBert || config.family == EncoderFamily::kDebertaV2 ||
                     config.family == EncoderFamily::kElectra) &&
                    config.type_vocab_size > 0;
  max_tokens_ = config.max_sequence_length();

  ModelDescription& d = description_;
  d.architecture = architecture;
  d.num_layers = config.num_layers;
  d.num_heads = config.num_heads;
  d.num_kv_heads = config.num_heads;
  d.head_dim = config.head_dim();
  d.hidden_size = config.hidden_size;
  d.vocab_size = config.vocab_size;
  d.max_positions = config.max_sequence_length();
  d.weight_dtype = options.weight_dtype;
  d.matmul_precision = options.matmul_precision;
  d.kv_dtype = DType::kF32;
  d.weight_bytes = bert_->weight_bytes();
  d.kv_bytes_per_token = 0;
  d.labels = config.labels;
  return absl::OkStatus();
}

absl::Status EncoderModel::ReadSentenceTransformers(const ModelDir& md, int max_positions, int hidden_size) {
  const SentenceTransformersConfig& st = md.sentence_transformers;
  int width = hidden_size;
  for (const SentenceTransformersDense& dense : st.dense) {
    if (dense.in_features != width) {
      return absl::InvalidArgumentError(absl::StrCat(dense.dir, "/config.json: in_features ", dense.in_features,
                                                     " but the pooled vector has ", width, " values"));
    }
    const std::string file = (std::filesystem::path(dense.dir) / "model.safetensors").string();
    if (!std::filesystem::exists(file)) {
      return absl::InvalidArgumentError(absl::StrCat(dense.dir, ": no model.safetensors (a pytorch_model.bin is not "
                                                     "read: save the model again with safetensors)"));
    }
    ASSIGN_OR_RETURN(std::unique_ptr<SafetensorsArchive> archive, SafetensorsArchive::OpenFile(file));
    DenseLayer layer;
    ASSIGN_OR_RETURN(layer.weight,
                     archive->LoadWithShape("linear.weight", {dense.out_features, dense.in_features}, DType::kF32));
    if (dense.bias) {
      ASSIGN_OR_RETURN(Tensor bias, archive->LoadWithShape("linear.bias", {dense.out_features}, DType::kF32));
      layer.bias.assign(bias.f32(), bias.f32() + bias.numel());
    }
    layer.tanh = dense.tanh;
    dense_.push_back(std::move(layer));
    width = dense.out_features;
  }
  if (!st.dense.empty()) description_.embedding_size = width;
  if (!st.pooling.empty()) {
    absl::StatusOr<PoolingMode> mode = PoolingModeFromName(st.pooling);
    if (!mode.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(md.dir, ": 1_Pooling: ", mode.status().message()));
    }
    default_pooling_ = *mode;
  }
  default_normalize_ = st.normalize;
  prompts_ = st.prompts;
  default_prompt_name_ = st.default_prompt_name;
  pooling_include_prompt_ = st.pooling_include_prompt;
  max_tokens_ = std::min(st.max_seq_length.value_or(max_positions), max_positions);
  return absl::OkStatus();
}

Tensor EncoderModel::ApplyDense(Tensor pooled) const {
  for (const DenseLayer& layer : dense_) {
    const int64_t out = layer.weight.dim(0), in = layer.weight.dim(1);
    Tensor next = Tensor::Empty({out});
    const float* x = pooled.f32();
    for (int64_t o = 0; o < out; ++o) {
      const float* w = layer.weight.f32() + o * in;
      double sum = layer.bias.empty() ? 0.0 : layer.bias[o];
      for (int64_t i = 0; i < in; ++i) sum += static_cast<double>(w[i]) * x[i];
      next.f32()[o] = layer.tanh ? std::tanh(static_cast<float>(sum)) : static_cast<float>(sum);
    }
    pooled = std::move(next);
  }
  return pooled;
}

absl::StatusOr<std::unique_ptr<EncoderModel>> EncoderModel::LoadGguf(const std::string& path,
                                                                     const EncoderLoadOptions& options) {
  ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> opened, GgufFile::Open(path));
  std::shared_ptr<const GgufFile> g = std::move(opened);
  ASSIGN_OR_RETURN(std::string arch, g->GetString("general.architecture"));
  if (IsUnreadBertGguf(arch)) {
    return absl::UnimplementedError(absl::StrCat(path, ": general.architecture '", arch,
                                                 "' is not read (of llama.cpp's encoder architectures, bert is: "
                                                 "BERT, all-MiniLM, bge, e5, mxbai-embed, snowflake-arctic-embed; "
                                                 "nomic-bert: nomic-embed-text; jina-bert-v2: "
                                                 "jina-embeddings-v2)"));
  }
  std::unique_ptr<EncoderModel> m(new EncoderModel());
  ASSIGN_OR_RETURN(m->tokenizer_, EncoderTokenizerFromGguf(*g));
  int64_t pooling_fallback = 3;
  if (arch == "bert" || arch == "nomic-bert" || arch == "jina-bert-v2") {
    ASSIGN_OR_RETURN(BertGguf bert, ReadBertGguf(g));
    if (m->tokenizer_->vocab_size() > bert.config.vocab_size) {
      return absl::InvalidArgumentError(absl::StrCat(path, ": the tokenizer has ", m->tokenizer_->vocab_size(),
                                                     " tokens but token_embd.weight ", bert.config.vocab_size,
                                                     " rows"));
    }
    RETURN_IF_ERROR(m->AdoptBert(*bert.weights, bert.config, options, arch));
    m->description_.name = std::filesystem::path(path).stem().string();
    m->description_.source = path;
    // A file without a pooling type was converted from a model without
    // sentence-transformers modules, which sentence-transformers pools by
    // the mean.
    pooling_fallback = 1;
  } else {
    LoadedDecoder loaded;
    ASSIGN_OR_RETURN(loaded.config, DecoderConfigFromGguf(*g));
    // As for a directory: no output (LM head) tensor is read.
    loaded.config.tie_word_embeddings = true;
    ASSIGN_OR_RETURN(loaded.weights, LoadDecoderWeightsFromGguf(*g, loaded.config, options.weight_dtype));
    loaded.source = path;
    loaded.format = "gguf";
    RETURN_IF_ERROR(
        m->AdoptDecoder(std::move(loaded), options, std::filesystem::path(path).stem().string(), arch));
    m->max_tokens_ = m->decoder_->max_positions();
  }
  // llama.cpp's <arch>.pooling_type: 1 mean, 2 cls, 3 last; a decoder's
  // file without one (or "none") is pooled at its last token, as causal
  // embedders are.
  if (!m->description_.labels.empty()) {
    // A cross-encoder / classifier (a reranker's file): scored by its head,
    // whatever pooling the file names (a reranker's is 4, rank).
    m->default_normalize_ = false;
    return m;
  }
  const std::string pooling_key = absl::StrCat(arch, ".pooling_type");
  ASSIGN_OR_RETURN(int64_t pooling, g->GetIntOr(pooling_key, pooling_fallback));
  if (pooling == 0) pooling = pooling_fallback;
  switch (pooling) {
    case 3: m->default_pooling_ = PoolingMode::kLast; break;
    case 1: m->default_pooling_ = PoolingMode::kMean; break;
    case 2: m->default_pooling_ = PoolingMode::kCls; break;
    default:
      return absl::InvalidArgumentError(absl::StrCat(path, ": ", pooling_key, " ", pooling,
                                                     " is not an embedding pooling (1 mean, 2 cls, 3 last; 4 is "
                                                     "a reranker's)"));
  }
  // llama.cpp's server normalises embeddings (L2) unless told otherwise.
  m->default_normalize_ = true;
  return m;
}

absl::StatusOr<std::unique_ptr<EncoderModel>> EncoderModel::LoadCausal(const ModelDir& md,
                                                                       const EncoderLoadOptions& options) {
  if (md.sentence_transformers.splade) {
    return absl::InvalidArgumentError(absl::StrCat(md.dir, ": a SpladePooling module needs a masked-language-model "
                                                           "encoder, not the decoder-only model_type \"",
                                                   md.config.model_type(), "\""));
  }
  if (md.tokenizer_json.empty()) {
    return absl::NotFoundError(absl::StrCat(md.dir, ": no tokenizer.json (the embedder needs its tokenizer)"));
  }
  std::unique_ptr<EncoderModel> m(new EncoderModel());
  ASSIGN_OR_RETURN(m->tokenizer_, LoadEncoderTokenizer(md.tokenizer_json));
  LoadedDecoder loaded;
  ASSIGN_OR_RETURN(loaded.config, DecoderConfigFromHf(md.config));
  if (m->tokenizer_->vocab_size() > loaded.config.vocab_size) {
    return absl::InvalidArgumentError(absl::StrCat(md.tokenizer_json, ": tokenizer has ", m->tokenizer_->vocab_size(),
                                                   " tokens but config.json vocab_size is ",
                                                   loaded.config.vocab_size));
  }
  // An embedder reads no LM head (an *Model checkpoint has none; a
  // *ForCausalLM one's is left unread): the embedding table is all it needs.
  loaded.config.tie_word_embeddings = true;
  ASSIGN_OR_RETURN(loaded.weights,
                   LoadDecoderWeightsFromHf(*md.weights, loaded.config, options.weight_dtype));
  loaded.source = md.dir;
  loaded.format = "hf";
  RETURN_IF_ERROR(m->AdoptDecoder(std::move(loaded), options, ModelName(md.dir), md.config.model_type()));
  RETURN_IF_ERROR(m->ReadSentenceTransformers(md, m->decoder_->max_positions(), m->hidden_size_));
  if (IsDecoderClassifier(md.config)) {
    ASSIGN_OR_RETURN(std::vector<std::string> labels, SequenceClassificationLabels(md.config));
    ASSIGN_OR_RETURN(m->score_, md.weights->LoadWithShape(
                                    "score.weight", {static_cast<int64_t>(labels.size()), m->hidden_size_},
                                    DType::kF32));
    const nlohmann::json& pad = md.config.json().contains("pad_token_id") ? md.config.json()["pad_token_id"]
                                                                           : nlohmann::json();
    if (pad.is_number_integer()) m->score_pad_id_ = pad.get<int32_t>();
    m->description_.labels = std::move(labels);
  }
  return m;
}

absl::Status EncoderModel::AdoptDecoder(LoadedDecoder loaded, const EncoderLoadOptions& options,
                                        const std::string& name, const std::string& architecture) {
  const std::string source = loaded.source;
  DecoderLoadOptions decoder_options;
  decoder_options.weight_dtype = options.weight_dtype;
  decoder_options.matmul_precision = options.matmul_precision;
  decoder_options.prepare_kernels = options.prepare_kernels;
  decoder_options.hidden_states_only = true;
  ASSIGN_OR_RETURN(decoder_, DecoderModel::FromLoaded(std::move(loaded), decoder_options));
  const DecoderConfig& c = decoder_->config();
  hidden_size_ = c.hidden_size;
  num_layers_ = c.num_layers;
  num_heads_ = c.num_heads;
  vocab_size_ = c.vocab_size;
  reads_segments_ = false;
  description_ = decoder_->description();
  description_.name = name;
  description_.architecture = architecture;
  description_.source = source;
  description_.kv_dtype = DType::kF32;
  description_.kv_bytes_per_token = 0;  // attention reads each layer's own QKV rows: no K/V cache
  return absl::OkStatus();
}

absl::StatusOr<std::vector<EncodeResult>> EncoderModel::Encode(absl::Span<const EncoderInput> inputs,
                                                               const EncodeOptions& options) const {
  ASSIGN_OR_RETURN(std::unique_ptr<EncodeJob> job, StartEncode(inputs, options));
  while (!job->done()) RETURN_IF_ERROR(job->RunSlice());
  return job->Finish();
}

absl::StatusOr<std::unique_ptr<EncodeJob>> EncoderModel::StartEncode(absl::Span<const EncoderInput> inputs,
                                                                     const EncodeOptions& options) const {
  if (inputs.empty()) return absl::InvalidArgumentError("Encode: empty batch (no inputs)");
  if (options.dimensions != 0) {
    if (options.dimensions < 1 || options.dimensions > hidden_size_) {
      return absl::InvalidArgumentError(absl::StrCat("Encode: dimensions ", options.dimensions, " is outside [1, ",
                                                     hidden_size_, "] (the model's embedding size)"));
    }
    if (options.pooling == PoolingMode::kNone) {
      return absl::InvalidArgumentError("Encode: dimensions shortens pooled embeddings; not with pooling none");
    }
  }
  const PoolingMode pooling = options.pooling == PoolingMode::kModelDefault ? default_pooling_ : options.pooling;
  if (pooling == PoolingMode::kSplade) {
    if (!sparse()) {
      return absl::InvalidArgumentError(
          "Encode: pooling splade needs a SPLADE model (a masked-language model with a SpladePooling module); "
          "this one has none");
    }
    if (options.dimensions != 0) {
      return absl::InvalidArgumentError("Encode: dimensions shortens dense embeddings; not with pooling splade");
    }
  }
  if (decoder_ != nullptr && !options.attention_layers.empty()) {
    return absl::InvalidArgumentError(
        "Encode: attention_layers: a decoder-based embedder does not return attention weights");
  }
  for (int layer : options.attention_layers) {
    if (layer < 0 || layer >= num_layers_) {
      return absl::InvalidArgumentError(absl::StrCat("Encode: attention layer ", layer, " is outside [0, ",
                                                     num_layers_, ")"));
    }
  }
  // The prompt before single texts: asked for by name, else the model's default.
  std::string prompt;
  const bool explicit_prompt = options.prompt_name.has_value() && !options.prompt_name->empty();
  const std::string prompt_name = options.prompt_name.value_or(default_prompt_name_);
  if (!prompt_name.empty()) {
    auto it = prompts_.find(prompt_name);
    if (it == prompts_.end()) {
      std::string names;
      for (const auto& [name, text] : prompts_) absl::StrAppend(&names, names.empty() ? "" : ", ", name);
      return absl::InvalidArgumentError(absl::StrCat("Encode: prompt_name \"", prompt_name,
                                                     "\" is not one of the model's prompts (",
                                                     names.empty() ? "it has none" : names, ")"));
    }
    prompt = it->second;
    if (!prompt.empty() && !pooling_include_prompt_) {
      return absl::InvalidArgumentError(
          "Encode: this model's pooling leaves the prompt's tokens out (1_Pooling include_prompt false), "
          "which is not supported");
    }
  }
  // Tokenize and validate everything before any compute.
  std::vector<EncodeResult> results(inputs.size());
  std::vector<int32_t> packed;
  std::vector<int32_t> lengths;
  lengths.reserve(inputs.size());
  // Segments, kept per input until we know whether any input is a pair.
  std::vector<std::vector<int32_t>> type_ids(inputs.size());
  bool any_pair = false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const EncoderInput& in = inputs[i];
    EncodeResult& r = results[i];
    if (explicit_prompt && !prompt.empty() && (!in.is_text || in.text_pair.has_value())) {
      return absl::InvalidArgumentError(absl::StrCat("Encode: input ", i, ": prompt_name \"", prompt_name,
                                                     "\" goes before a single text, not ",
                                                     in.is_text ? "a text pair" : "token ids"));
    }
    if (in.is_text) {
      const int limit = options.truncate ? max_tokens_ : 0;
      absl::StatusOr<TextEncoding> enc =
          in.text_pair.has_value()
              ? tokenizer_->EncodePair(in.text, *in.text_pair, limit, options.truncation_side)
              : tokenizer_->Encode(prompt.empty() ? in.text : prompt + in.text, /*add_special_tokens=*/true, limit,
                                   options.truncation_side);
      if (!enc.ok()) {
        return absl::InvalidArgumentError(absl::StrCat("Encode: input ", i, ": ", enc.status().message()));
      }
      r.token_ids = std::move(enc->ids);
      r.truncated = enc->truncated;
      type_ids[i] = std::move(enc->type_ids);
      any_pair = any_pair || in.text_pair.has_value();
    } else if (in.text_pair.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat("Encode: input ", i, ": a text pair needs a text, not token ids"));
    } else {
      if (in.token_ids.empty()) {
        return absl::InvalidArgumentError(absl::StrCat("Encode: input ", i, ": no token ids"));
      }
      for (size_t k = 0; k < in.token_ids.size(); ++k) {
        if (in.token_ids[k] < 0 || in.token_ids[k] >= vocab_size_) {
          return absl::InvalidArgumentError(absl::StrCat("Encode: input ", i, ": token id ", in.token_ids[k],
                                                         " at position ", k, " is outside [0, ", vocab_size_,
                                                         ")"));
        }
      }
      r.token_ids = in.token_ids;
      if (options.truncate && static_cast<int>(r.token_ids.size()) > max_tokens_) {
        if (options.truncation_side == TruncationSide::kStart) {
          r.token_ids.erase(r.token_ids.begin(), r.token_ids.end() - max_tokens_);
        } else {
          r.token_ids.resize(max_tokens_);
        }
        r.truncated = true;
      }
    }
    if (static_cast<int>(r.token_ids.size()) > max_tokens_) {
      return absl::InvalidArgumentError(absl::StrCat("Encode: input ", i, " has ", r.token_ids.size(),
                                                     " tokens; the model's limit is ", max_tokens_,
                                                     " and truncation is off"));
    }
    lengths.push_back(static_cast<int32_t>(r.token_ids.size()));
    packed.insert(packed.end(), r.token_ids.begin(), r.token_ids.end());
  }
  // Segments reach the model only in the BERT family: RoBERTa's, XLM-R's
  // and MPNet's tokenizers return no token_type_ids (their
  // model_input_names), so their models see segment 0 whatever the
  // template's type ids say (MPNet's converted files give the second text
  // type 1, and MPNet has no token-type table at all).
  std::vector<int32_t> packed_types;
  if (any_pair && reads_segments_) {
    packed_types.reserve(packed.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (type_ids[i].empty()) {
        packed_types.insert(packed_types.end(), lengths[i], 0);
      } else {
        packed_types.insert(packed_types.end(), type_ids[i].begin(), type_ids[i].end());
      }
    }
  }

  BertForwardRequest request;
  request.hidden_states = options.return_hidden_states;
  request.attention_layers = options.attention_layers;
  request.average_heads = options.attention_average_heads;
  std::unique_ptr<EncodeJob> job(new EncodeJob());
  if (decoder_ != nullptr) {
    ASSIGN_OR_RETURN(job->forward_, CausalForwardJob::Begin(decoder_, packed, lengths, request.hidden_states));
  } else {
    ASSIGN_OR_RETURN(job->forward_, bert_->Begin(packed, lengths, request, packed_types));
  }
  job->model_ = this;
  job->options_ = options;
  job->results_ = std::move(results);
  job->lengths_ = std::move(lengths);
  if (pooling == PoolingMode::kSplade) {
    // One slice per block of the head's vocabulary (each about a third of a
    // layer's multiply-adds), the first also running the transform.
    const MlmHead& head = *bert_->mlm_head();
    job->head_slices_ = head.num_blocks();
    job->splade_.assign(job->lengths_.size() * static_cast<size_t>(head.vocab_size()), 0.0f);
  }
  return job;
}

absl::Status EncodeJob::RunSlice() {
  if (!forward_->done()) {
    RETURN_IF_ERROR(forward_->RunSlice());
    if (forward_->done()) {
      forward_result_.emplace();
      RETURN_IF_ERROR(forward_->Finish(&*forward_result_));
    }
    return absl::OkStatus();
  }
  if (head_slices_done_ < head_slices_) return RunHeadSlice();
  return absl::FailedPreconditionError("EncodeJob::RunSlice: every slice has run");
}

// Head slice k pools vocabulary block k of every token into its sequence's
// vector; the first runs the transform of every token.
absl::Status EncodeJob::RunHeadSlice() {
  const MlmHead& head = *model_->bert_->mlm_head();
  const int v = head.vocab_size();
  int64_t total = 0;
  for (int32_t n : lengths_) total += n;
  if (head_slices_done_ == 0) {
    head_x_ = Tensor::Empty({total, head.hidden_size()});
    RETURN_IF_ERROR(head.Transform(forward_result_->last_hidden.f32(), total, head_x_.f32()));
    head_row_out_.clear();
    for (size_t b = 0; b < lengths_.size(); ++b) {
      head_row_out_.insert(head_row_out_.end(), lengths_[b], splade_.data() + b * static_cast<size_t>(v));
    }
  }
  RETURN_IF_ERROR(head.AccumulateBlock(model_->splade_, head_slices_done_, head_x_.f32(), total,
                                       head_row_out_.data()));
  if (++head_slices_done_ == head_slices_) head_x_ = Tensor();
  return absl::OkStatus();
}

namespace {

// A sequence's pooled SPLADE vector dense[V] as its non-zero entries.
void SparseEmbedding(float* dense, int v, bool normalize, EncodeResult& r) {
  if (normalize) L2Normalize(dense, v);
  for (int k = 0; k < v; ++k) {
    if (dense[k] == 0.0f) continue;
    r.sparse_indices.push_back(k);
    r.sparse_values.push_back(dense[k]);
  }
}

}  // namespace

absl::StatusOr<std::vector<EncodeResult>> EncodeJob::Finish() {
  if (!done() || !forward_result_.has_value()) {
    return absl::FailedPreconditionError(absl::StrCat("EncodeJob::Finish: ", slices_done(), " of ", slices_total(),
                                                      " slices have run, or the result was already taken"));
  }
  EncoderForwardResult forward = std::move(*forward_result_);
  forward_result_.reset();
  const EncodeOptions& options = options_;
  const std::vector<int32_t>& lengths = lengths_;
  std::vector<EncodeResult> results = std::move(results_);
  const PoolingMode pooling =
      options.pooling == PoolingMode::kModelDefault ? model_->default_pooling_ : options.pooling;
  const bool normalize = options.normalize.value_or(model_->default_normalize_);
  const int d = model_->hidden_size_;
  const int heads = model_->num_heads_;
  const float* hidden = forward.last_hidden.f32();
  const ClassifierHead* classifier = model_->bert_ != nullptr ? model_->bert_->classifier() : nullptr;
  int64_t start = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    EncodeResult& r = results[i];
    const int n = lengths[i];
    const float* rows = hidden + start * d;
    if (classifier != nullptr) {
      r.logits.resize(classifier->num_labels());
      classifier->Logits(rows, n, r.logits.data());
    } else if (!model_->score_.empty()) {
      // transformers: the rightmost token that is not the pad token (0
      // when every token is), or the last when the config has no pad token.
      int t = n - 1;
      if (model_->score_pad_id_ >= 0) {
        while (t > 0 && r.token_ids[t] == model_->score_pad_id_) --t;
      }
      const int64_t labels = model_->score_.dim(0);
      r.logits.assign(labels, 0.0f);
      for (int64_t l = 0; l < labels; ++l) {
        const float* w = model_->score_.f32() + l * d;
        const float* x = rows + int64_t{t} * d;
        double sum = 0.0;
        for (int k = 0; k < d; ++k) sum += static_cast<double>(w[k]) * x[k];
        r.logits[l] = static_cast<float>(sum);
      }
    }
    if (pooling == PoolingMode::kSplade) {
      const int v = model_->bert_->mlm_head()->vocab_size();
      SparseEmbedding(splade_.data() + i * static_cast<size_t>(v), v, normalize, r);
    } else if (pooling == PoolingMode::kNone) {
      r.embedding = Tensor::Empty({n, d});
      std::memcpy(r.embedding.f32(), rows, sizeof(float) * n * d);
      if (normalize) {
        for (int t = 0; t < n; ++t) L2Normalize(r.embedding.f32() + int64_t{t} * d, d);
      }
    } else {
      r.embedding = Tensor::Empty({d});
      PoolTokens(pooling, rows, n, d, r.embedding.f32());
      r.embedding = model_->ApplyDense(std::move(r.embedding));
      if (options.dimensions > 0 && options.dimensions < r.embedding.numel()) {
        // Matryoshka: the leading values, normalised (below) as a whole.
        Tensor shortened = Tensor::Empty({options.dimensions});
        std::memcpy(shortened.f32(), r.embedding.f32(), sizeof(float) * options.dimensions);
        r.embedding = std::move(shortened);
      }
      if (normalize) L2Normalize(r.embedding.f32(), static_cast<int>(r.embedding.numel()));
    }
    for (const Tensor& h : forward.hidden_states) {
      Tensor slice = Tensor::Empty({n, d});
      std::memcpy(slice.f32(), h.f32() + start * d, sizeof(float) * n * d);
      r.hidden_states.push_back(std::move(slice));
    }
    for (const auto& [layer, w] : forward.attentions) {
      // w: [B, H, Nmax, Nmax] or [B, Nmax, Nmax]; keep this sequence's n x n block.
      const int h_count = options.attention_average_heads ? 1 : heads;
      const int64_t nmax = w.dim(-1);
      Tensor slice = options.attention_average_heads ? Tensor::Empty({n, n}) : Tensor::Empty({heads, n, n});
      for (int h = 0; h < h_count; ++h) {
        const float* src = w.f32() + (static_cast<int64_t>(i) * h_count + h) * nmax * nmax;
        for (int q = 0; q < n; ++q) {
          std::memcpy(slice.f32() + (int64_t{h} * n + q) * n, src + q * nmax, sizeof(float) * n);
        }
      }
      r.attentions.emplace_back(layer, std::move(slice));
    }
    start += n;
  }
  return results;
}

absl::StatusOr<std::vector<int32_t>> EncoderModel::Tokenize(std::string_view text, bool add_special_tokens) const {
  ASSIGN_OR_RETURN(TextEncoding enc,
                   tokenizer_->Encode(absl::string_view(text.data(), text.size()), add_special_tokens));
  return std::move(enc.ids);
}

std::vector<std::string> EncoderModel::TokenStrings(absl::Span<const int32_t> ids) const {
  std::vector<std::string> out;
  out.reserve(ids.size());
  for (int32_t id : ids) out.push_back(tokenizer_->IdToToken(id));
  return out;
}

absl::StatusOr<std::string> EncoderModel::Detokenize(absl::Span<const int32_t> ids, bool skip_special_tokens) const {
  return tokenizer_->Decode(ids, skip_special_tokens);
}

int64_t EncoderModel::ScratchBytes(int batch_size, int seq_len) const {
  if (decoder_ != nullptr) {
    // The decoder's step buffers (every layer's attention reads its own
    // QKV rows: no cache) and the result.
    const int64_t tokens = int64_t{batch_size} * seq_len;
    return decoder_->ScratchBytes(tokens) + tokens * hidden_size_ * static_cast<int64_t>(sizeof(float));
  }
  const MlmHead* head = bert_->mlm_head();
  if (head == nullptr) return bert_->ScratchBytes(batch_size, seq_len);
  // SPLADE: the head's logits chunk, every token's transformed row and each
  // sequence's pooled [V] vector.
  const int64_t tokens = int64_t{batch_size} * seq_len;
  const int64_t floats = tokens * head->hidden_size() + int64_t{batch_size} * head->vocab_size();
  return bert_->ScratchBytes(batch_size, seq_len) + head->ScratchBytes() +
         static_cast<int64_t>(sizeof(float)) * floats;
}

}  // namespace attnserve
