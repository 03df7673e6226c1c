#include "server/core/proto_convert.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace attnserve {
namespace {

void ToProtoTensor(const Tensor& t, v1::Tensor* out) {
  for (int64_t d : t.shape()) out->add_shape(d);
  if (t.numel() == 0) return;
  const float* p = t.f32();
  out->mutable_values()->Assign(p, p + t.numel());
}

PoolingMode ToPooling(v1::Pooling p) {
  switch (p) {
    case v1::POOLING_MEAN: return PoolingMode::kMean;
    case v1::POOLING_CLS: return PoolingMode::kCls;
    case v1::POOLING_LAST: return PoolingMode::kLast;
    case v1::POOLING_NONE: return PoolingMode::kNone;
    case v1::POOLING_MAX: return PoolingMode::kMax;
    case v1::POOLING_SPLADE: return PoolingMode::kSplade;
    default: return PoolingMode::kModelDefault;
  }
}

absl::Status CheckRange(const char* field, double value, double lo, double hi, bool lo_open) {
  if (!std::isfinite(value) || value > hi || (lo_open ? value <= lo : value < lo)) {
    return absl::InvalidArgumentError(absl::StrCat("sampling.", field, " = ", value, ": must be in ", lo_open ? "(" : "[",
                                                   lo, ", ", hi, "]"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<EncodeCall> ToEncodeCall(const v1::EncodeRequest& request, const ModelDescription& model,
                                        int max_inputs) {
  if (request.inputs_size() == 0) return absl::InvalidArgumentError("inputs: at least one input is required");
  if (request.inputs_size() > max_inputs) {
    return absl::InvalidArgumentError(absl::StrCat("inputs: ", request.inputs_size(), " inputs; the limit is ",
                                                   max_inputs, " (--encode-max-inputs-per-request)"));
  }
  EncodeCall call;
  call.inputs.reserve(request.inputs_size());
  for (int i = 0; i < request.inputs_size(); ++i) {
    const v1::EncodeInput& in = request.inputs(i);
    EncoderInput input;
    switch (in.content_case()) {
      case v1::EncodeInput::kText:
        input.is_text = true;
        input.text = in.text();
        if (in.has_text_pair()) input.text_pair = in.text_pair();
        break;
      case v1::EncodeInput::kTokenIds:
        if (in.has_text_pair()) {
          return absl::InvalidArgumentError(
              absl::StrCat("inputs[", i, "].text_pair: a pair needs inputs[", i, "].text, not token_ids"));
        }
        input.is_text = false;
        input.token_ids.assign(in.token_ids().ids().begin(), in.token_ids().ids().end());
        break;
      default:
        return absl::InvalidArgumentError(absl::StrCat("inputs[", i, "]: set either text or token_ids"));
    }
    call.inputs.push_back(std::move(input));
  }
  EncodeOptions& o = call.options;
  o.pooling = ToPooling(request.pooling());
  if (request.has_normalize()) o.normalize = request.normalize();
  o.truncate = request.truncation() != v1::TRUNCATION_NONE;
  o.truncation_side = request.truncation() == v1::TRUNCATION_START ? TruncationSide::kStart : TruncationSide::kEnd;
  if (request.has_dimensions()) {
    const int size = model.embedding_size > 0 ? model.embedding_size : model.hidden_size;
    if (request.dimensions() < 1 || request.dimensions() > size) {
      return absl::InvalidArgumentError(absl::StrCat("dimensions: ", request.dimensions(), " is outside [1, ",
                                                     size, "] (the model's embedding size)"));
    }
    if (request.pooling() == v1::POOLING_NONE) {
      return absl::InvalidArgumentError("dimensions: shortens pooled embeddings; not with pooling NONE");
    }
    o.dimensions = request.dimensions();
  }
  if (request.has_prompt_name()) o.prompt_name = request.prompt_name();
  o.return_hidden_states = request.return_hidden_states();
  for (int i = 0; i < request.attention_layers_size(); ++i) {
    const int layer = request.attention_layers(i);
    if (layer < 0 || layer >= model.num_layers) {
      return absl::InvalidArgumentError(absl::StrCat("attention_layers[", i, "] = ", layer, " is out of range [0, ",
                                                     model.num_layers, ")"));
    }
    o.attention_layers.push_back(layer);
  }
  o.attention_average_heads = request.attention_weights() == v1::ATTENTION_WEIGHTS_AVERAGED;
  return call;
}

v1::EncodeResponse ToEncodeResponse(std::vector<EncodeResult> results, const v1::EncodeUsage& usage,
                                    const std::string& model_name) {
  v1::EncodeResponse response;
  response.set_model(model_name);
  *response.mutable_usage() = usage;
  for (EncodeResult& r : results) {
    v1::EncodeResult* out = response.add_results();
    ToProtoTensor(r.embedding, out->mutable_embedding());
    out->mutable_token_ids()->Assign(r.token_ids.begin(), r.token_ids.end());
    out->set_truncated(r.truncated);
    out->mutable_logits()->Assign(r.logits.begin(), r.logits.end());
    if (!r.sparse_indices.empty() || r.embedding.numel() == 0) {
      v1::SparseEmbedding* sparse = out->mutable_sparse_embedding();
      sparse->mutable_indices()->Assign(r.sparse_indices.begin(), r.sparse_indices.end());
      sparse->mutable_values()->Assign(r.sparse_values.begin(), r.sparse_values.end());
    }
    for (const Tensor& h : r.hidden_states) ToProtoTensor(h, out->add_hidden_states());
    for (const auto& [layer, weights] : r.attentions) {
      v1::LayerAttention* a = out->add_attentions();
      a->set_layer(layer);
      ToProtoTensor(weights, a->mutable_weights());
    }
  }
  return response;
}

absl::StatusOr<GenerationParams> ToGenerationParams(const v1::GenerateRequest& request, const ModelDescription& model,
                                                    int max_new_tokens_limit, uint64_t random_seed) {
  const v1::SamplingParams& s = request.sampling();
  GenerationParams p;
  p.max_new_tokens = s.has_max_new_tokens() ? s.max_new_tokens() : 64;
  if (p.max_new_tokens < 1 || p.max_new_tokens > max_new_tokens_limit) {
    return absl::InvalidArgumentError(absl::StrCat("sampling.max_new_tokens = ", p.max_new_tokens,
                                                   ": must be in [1, ", max_new_tokens_limit,
                                                   "] (--max-new-tokens-limit)"));
  }
  p.top_k = s.top_k();
  if (p.top_k < 0) {
    return absl::InvalidArgumentError(absl::StrCat("sampling.top_k = ", p.top_k, ": must be >= 0 (0 = off)"));
  }
  p.temperature = s.has_temperature() ? s.temperature() : (p.top_k == 1 ? 0.0f : 1.0f);
  if (absl::Status st = CheckRange("temperature", p.temperature, 0, 100, false); !st.ok()) return st;
  p.top_p = s.has_top_p() ? s.top_p() : 1.0f;
  if (absl::Status st = CheckRange("top_p", p.top_p, 0, 1, true); !st.ok()) return st;
  p.min_p = s.min_p();
  if (absl::Status st = CheckRange("min_p", p.min_p, 0, 1, false); !st.ok()) return st;
  p.typical_p = s.has_typical_p() ? s.typical_p() : 1.0f;
  if (absl::Status st = CheckRange("typical_p", p.typical_p, 0, 1, true); !st.ok()) return st;
  p.repetition_penalty = s.has_repetition_penalty() ? s.repetition_penalty() : 1.0f;
  if (absl::Status st = CheckRange("repetition_penalty", p.repetition_penalty, 0, 10, true); !st.ok()) return st;
  p.frequency_penalty = s.frequency_penalty();
  p.presence_penalty = s.presence_penalty();
  if (absl::Status st = CheckRange("frequency_penalty", p.frequency_penalty, -2, 2, false); !st.ok()) return st;
  if (absl::Status st = CheckRange("presence_penalty", p.presence_penalty, -2, 2, false); !st.ok()) return st;
  for (const auto& [id, bias] : s.logit_bias()) p.logit_bias.push_back({id, bias});
  p.allowed_token_ids.assign(s.allowed_token_ids().begin(), s.allowed_token_ids().end());
  p.cache_salt = s.cache_salt();
  p.bad_words.assign(s.bad_words().begin(), s.bad_words().end());
  // A fixed order (the map's is not), so a request is applied the same way each time.
  std::sort(p.logit_bias.begin(), p.logit_bias.end(),
            [](const LogitBias& a, const LogitBias& b) { return a.id < b.id; });
  if (s.top_logprobs() < 0 || s.top_logprobs() > 20) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling.top_logprobs = ", s.top_logprobs(), ": must be in [0, 20]"));
  }
  p.seed = s.has_seed() ? s.seed() : random_seed;
  p.stop.assign(s.stop().begin(), s.stop().end());
  p.include_stop_string = s.include_stop_str_in_output();
  p.stop_token_ids.assign(s.stop_token_ids().begin(), s.stop_token_ids().end());
  p.ignore_eos = s.ignore_eos();
  p.skip_special_tokens = !s.has_skip_special_tokens() || s.skip_special_tokens();
  p.min_tokens = s.min_tokens();
  p.logprobs = s.logprobs() || s.top_logprobs() > 0;
  p.top_logprobs = s.top_logprobs();
  p.prompt_logprobs = s.prompt_logprobs();
  p.prompt_top_logprobs = s.has_prompt_top_logprobs() ? s.prompt_top_logprobs() : -1;
  switch (s.response_format()) {
    case v1::RESPONSE_FORMAT_TEXT: p.output_format = OutputFormat::kText; break;
    case v1::RESPONSE_FORMAT_JSON_OBJECT: p.output_format = OutputFormat::kJsonObject; break;
    case v1::RESPONSE_FORMAT_CHOICE: p.output_format = OutputFormat::kChoice; break;
    case v1::RESPONSE_FORMAT_JSON_SCHEMA: p.output_format = OutputFormat::kJsonSchema; break;
    case v1::RESPONSE_FORMAT_REGEX: p.output_format = OutputFormat::kRegex; break;
    case v1::RESPONSE_FORMAT_LAZY_JSON_SCHEMA: p.output_format = OutputFormat::kLazyJsonSchema; break;
    default:
      return absl::InvalidArgumentError(
          absl::StrCat("sampling.response_format = ", s.response_format(), ": not a known format"));
  }
  p.choices.assign(s.choice().begin(), s.choice().end());
  p.json_schema = s.json_schema();
  p.regex = s.regex();
  p.lazy_trigger = s.lazy_trigger();
  p.constrain_after = s.constrain_after();
  p.thinking_token_budget = s.has_thinking_token_budget() ? s.thinking_token_budget() : -1;
  if (s.has_thinking_token_budget() && s.thinking_token_budget() < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("sampling.thinking_token_budget = ", s.thinking_token_budget(), ": must be >= 0"));
  }
  p.thinking_end = s.thinking_end();
  if (absl::Status st = ValidateGenerationParams(p, model); !st.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("sampling: ", st.message()));
  }
  return p;
}

absl::StatusOr<std::vector<int32_t>> ToPromptIds(const v1::GenerateRequest& request, const Tokenizer& tokenizer,
                                                 int max_positions, const ChatSetup* chat) {
  std::vector<int32_t> ids;
  switch (request.prompt_case()) {
    case v1::GenerateRequest::kText: {
      absl::StatusOr<std::vector<int32_t>> encoded = tokenizer.Encode(request.text());
      if (!encoded.ok()) return absl::InvalidArgumentError(absl::StrCat("text: ", encoded.status().message()));
      ids = std::move(*encoded);
      break;
    }
    case v1::GenerateRequest::kTokenIds: {
      const int vocab = tokenizer.vocab_size();
      for (int i = 0; i < request.token_ids().ids_size(); ++i) {
        const int32_t id = request.token_ids().ids(i);
        if (id < 0 || id >= vocab) {
          return absl::InvalidArgumentError(
              absl::StrCat("token_ids.ids[", i, "] = ", id, " is out of range [0, ", vocab, ")"));
        }
        ids.push_back(id);
      }
      break;
    }
    case v1::GenerateRequest::kChat: {
      if (chat == nullptr) return absl::FailedPreconditionError("chat: this server renders no chat prompts");
      absl::StatusOr<std::vector<int32_t>> rendered = ChatPromptIds(request.chat(), *chat, tokenizer);
      if (!rendered.ok()) return rendered.status();
      ids = std::move(*rendered);
      break;
    }
    default:
      return absl::InvalidArgumentError("prompt: set one of text, token_ids or chat");
  }
  if (ids.empty()) return absl::InvalidArgumentError("prompt: it has no tokens");
  if (request.has_truncate_prompt_tokens()) {
    const int32_t keep = request.truncate_prompt_tokens() == -1 ? max_positions - 1 : request.truncate_prompt_tokens();
    if (keep < 1 || keep >= max_positions) {
      return absl::InvalidArgumentError(absl::StrCat("truncate_prompt_tokens = ", request.truncate_prompt_tokens(),
                                                     ": must be -1 (the context less one, ", max_positions - 1,
                                                     ") or in [1, ", max_positions - 1, "]"));
    }
    if (static_cast<int>(ids.size()) > keep) ids.erase(ids.begin(), ids.end() - keep);
  }
  if (static_cast<int>(ids.size()) >= max_positions) {
    return absl::InvalidArgumentError(absl::StrCat("prompt: ", ids.size(), " tokens; the model's context is ",
                                                   max_positions, " tokens and generation needs at least one more"));
  }
  return ids;
}

namespace {

void SetPositionLogprobs(const SampledToken& t, v1::PositionLogprobs* lp) {
  lp->set_logprob(t.logprob);
  lp->set_rank(t.rank);
  for (const TokenLogprob& alt : t.top) {
    v1::TokenLogprob* a = lp->add_top();
    a->set_token_id(alt.id);
    a->set_text(ReplaceInvalidUtf8(alt.text));
    a->set_logprob(alt.logprob);
  }
}

}  // namespace

v1::GenerateResponse ToGenerateChunk(const StepEvent& event) {
  v1::GenerateResponse chunk;
  chunk.mutable_token_ids()->Assign(event.token_ids.begin(), event.token_ids.end());
  chunk.set_text(ReplaceInvalidUtf8(event.text));
  for (const SampledToken& t : event.logprobs) SetPositionLogprobs(t, chunk.add_logprobs());
  // Prompt position p >= 1 was scored as prompt_logprobs[p - 1].
  for (size_t p = 0; p < event.prompt_ids.size(); ++p) {
    v1::PromptToken* token = chunk.add_prompt_tokens();
    token->set_token_id(event.prompt_ids[p]);
    if (p < event.prompt_token_text.size()) token->set_text(ReplaceInvalidUtf8(event.prompt_token_text[p]));
    if (p >= 1 && p - 1 < event.prompt_logprobs.size()) {
      SetPositionLogprobs(event.prompt_logprobs[p - 1], token->mutable_logprobs());
    }
  }
  return chunk;
}

void AppendGenerateChunk(v1::GenerateResponse* into, v1::GenerateResponse next) {
  into->mutable_token_ids()->Add(next.token_ids().begin(), next.token_ids().end());
  into->mutable_text()->append(next.text());
  for (v1::PositionLogprobs& lp : *next.mutable_logprobs()) *into->add_logprobs() = std::move(lp);
  for (v1::PromptToken& t : *next.mutable_prompt_tokens()) *into->add_prompt_tokens() = std::move(t);
  if (next.finish_reason() != v1::FINISH_REASON_UNSPECIFIED) into->set_finish_reason(next.finish_reason());
  if (next.has_usage()) *into->mutable_usage() = std::move(*next.mutable_usage());
  if (next.has_stop_string()) into->set_stop_string(next.stop_string());
  if (next.has_stop_token_id()) into->set_stop_token_id(next.stop_token_id());
  if (next.prompt_token_count() != 0) into->set_prompt_token_count(next.prompt_token_count());
  if (next.cached_prompt_token_count() != 0) into->set_cached_prompt_token_count(next.cached_prompt_token_count());
  into->mutable_prompt_token_ids()->Add(next.prompt_token_ids().begin(), next.prompt_token_ids().end());
}

v1::FinishReason ToProtoFinishReason(FinishReason reason, int32_t last_token, const GenerationParams& params) {
  switch (reason) {
    case FinishReason::kLength: return v1::FINISH_REASON_LENGTH;
    case FinishReason::kStopString: return v1::FINISH_REASON_STOP_STRING;
    case FinishReason::kContext: return v1::FINISH_REASON_CONTEXT_LENGTH;
    case FinishReason::kStop:
      for (int32_t id : params.stop_token_ids) {
        if (id == last_token) return v1::FINISH_REASON_STOP_TOKEN;
      }
      return v1::FINISH_REASON_EOS;
    default: return v1::FINISH_REASON_UNSPECIFIED;
  }
}

void SetStopReason(const GenerationParams& params, int32_t last_token, int stop_index, v1::GenerateResponse* last) {
  if (last->finish_reason() == v1::FINISH_REASON_STOP_TOKEN) last->set_stop_token_id(last_token);
  if (last->finish_reason() == v1::FINISH_REASON_STOP_STRING && stop_index >= 0 &&
      static_cast<size_t>(stop_index) < params.stop.size()) {
    last->set_stop_string(params.stop[stop_index]);
  }
}

std::string ReplaceInvalidUtf8(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = s[i];
    int len = 0;
    uint32_t cp = 0;
    if (c < 0x80) { len = 1; cp = c; }
    else if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
    bool ok = len > 0 && i + len <= s.size();
    for (int k = 1; ok && k < len; ++k) {
      const unsigned char cc = s[i + k];
      if ((cc & 0xC0) != 0x80) ok = false;
      cp = (cp << 6) | (cc & 0x3F);
    }
    // Overlong forms, surrogates and values past U+10FFFF are invalid too.
    if (ok && ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
               (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF)) {
      ok = false;
    }
    if (ok) {
      out.append(s.substr(i, len));
      i += len;
    } else {
      out += "\xEF\xBF\xBD";
      ++i;
    }
  }
  return out;
}

v1::ModelInfo ToModelInfo(const ModelDescription& d, v1::ModelKind kind) {
  v1::ModelInfo info;
  info.set_kind(kind);
  info.set_name(d.name);
  info.set_architecture(d.architecture);
  info.set_num_layers(d.num_layers);
  info.set_num_heads(d.num_heads);
  info.set_num_kv_heads(d.num_kv_heads);
  info.set_head_dim(d.head_dim);
  info.set_hidden_size(d.hidden_size);
  info.set_vocab_size(d.vocab_size);
  info.set_max_positions(d.max_positions);
  info.set_weight_dtype(DTypeName(d.weight_dtype));
  if (kind == v1::MODEL_KIND_DECODER) info.set_kv_cache_dtype(DTypeName(d.kv_dtype));
  info.set_compute_dtype("f32");
  info.set_weight_bytes(d.weight_bytes);
  info.set_kv_bytes_per_token(d.kv_bytes_per_token);
  info.set_num_experts(d.num_experts);
  info.set_experts_per_token(d.experts_per_token);
  info.set_source(d.source);
  info.set_matmul_precision(MatmulPrecisionName(d.matmul_precision));
  for (const std::string& label : d.labels) info.add_labels(label);
  return info;
}

}  // namespace attnserve
