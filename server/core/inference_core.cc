#include "server/core/inference_core.h"

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <optional>
#include <utility>
#include <vector>

#include "absl/log/log.h"
#include "absl/random/random.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "engine/core/status_macros.h"
#include "engine/models/pooling.h"
#include "engine/tokenizers/streaming_detokenizer.h"
#include "server/cgroup_limits.h"
#include "server/core/delivery_queue.h"
#include "server/core/proto_convert.h"
#include "server/scheduler/engine_backends.h"
#include "server/scheduler/scheduler.h"

namespace attnserve {

// The models the server loaded at start, and the scheduler backends over them.
class LoadedModels {
 public:
  std::unique_ptr<EncoderModel> encoder;
  std::string encoder_name;
  std::unique_ptr<EncoderBackend> encode_backend;
  std::shared_ptr<const DecoderModel> decoder;
  std::string decoder_name;
  std::unique_ptr<DecoderBackend> generate_backend;
  ChatSetup chat;  // how chat prompts are rendered (chat_prompt.h)
  int max_new_tokens_limit = 0;
  int encode_max_inputs = 0;
};

namespace {

// Which longrope factor list the served context picked, and how to get the
// other (engine/formats/decoder_config.h); "" for other models.
std::string LongRopeNote(const DecoderConfig& config) {
  const RopeScaling& s = config.rope_scaling;
  if (config.positions != PositionKind::kRope || s.kind != RopeScalingKind::kLongRope) return "";
  return s.use_long
             ? absl::StrCat(" (longrope: the long factors for every sequence, the context exceeding the original ",
                            s.original_max_positions, ")")
             : absl::StrCat(" (longrope: the short factors, within the original ", s.original_max_positions,
                            " positions; a --decoder-context-length above it switches every sequence to the long "
                            "ones)");
}


// --weight-dtype, checked at start (server/options.cc).
DType ParseDType(const std::string& name) {
  if (name == "bf16") return DType::kBF16;
  if (name == "q8_0") return DType::kQ8_0;
  return DType::kF32;
}

std::string ShortName(const std::string& path) {
  std::filesystem::path p(path);
  while (!p.empty() && p.filename().empty()) p = p.parent_path();  // trailing '/'
  std::string name = p.filename().string();
  if (name == "model" && p.has_parent_path()) name = p.parent_path().filename().string();  // pkg/model
  return name.empty() ? path : name;
}

absl::Status Prefixed(const char* flag, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat("--", flag, ": ", s.message()));
}

// Delivery workers. One: handing a token to gRPC costs about 15 us of the
// worker's CPU (stories260K at 16 streams: 0.16 of a core at 11k tokens/s),
// so one worker keeps up with the engine, and each extra thread would compete
// with the engine's own threads for the cores.
constexpr int kDeliveryWorkers = 1;

// What a Generate's delivery jobs share. Only touched on its delivery worker,
// one job at a time (all jobs of a request have the same key).
struct GenerateStream {
  GenerateSink sink;
  int32_t last_token = -1;  // for the finish reason (a stop token or the length)
  int stop_index = -1;      // the stop string that matched (StepEvent::stop_index)
  // The sequence's finishing event, held to ride on the ending message.
  std::optional<v1::GenerateResponse> last_event;
  bool first_sent = false;  // the first message (with the prompt's token count) was made
  // GenerateRequest.return_prompt_token_ids: the prompt, for the first message.
  std::vector<int32_t> prompt_ids;
  // Set on the scheduler thread at admission, read by the first message's
  // job, which the delivery queue's lock orders after it.
  std::atomic<int> cached_prompt_tokens{0};

  // What only the first message carries.
  void MarkFirst(int prompt_token_count, v1::GenerateResponse* first) {
    first->set_prompt_token_count(prompt_token_count);
    first->set_cached_prompt_token_count(cached_prompt_tokens.load(std::memory_order_relaxed));
    first->mutable_prompt_token_ids()->Assign(prompt_ids.begin(), prompt_ids.end());
    prompt_ids = {};
    first_sent = true;
  }
};

// The request's id: the door's, else a new one (kept in `control`).
const std::string& EnsureRequestId(RequestControl& control, RequestIdMaker& ids) {
  if (control.request_id.empty()) control.request_id = ids.Next();
  return control.request_id;
}

void LogRequest(bool enabled, const RequestLogEntry& entry) {
  if (enabled) LOG(INFO) << FormatRequestLog(entry);
}

uint64_t RandomSeed() {
  thread_local absl::BitGen gen;
  return absl::Uniform<uint64_t>(gen);
}

}  // namespace

absl::StatusOr<std::unique_ptr<InferenceCore>> InferenceCore::Create(const ServerOptions& options,
                                                                     ServerMetrics* metrics) {
  std::unique_ptr<InferenceCore> core(new InferenceCore());
  core->metrics_ = metrics;
  core->log_requests_ = options.logging.log_requests;
  core->models_ = std::make_unique<LoadedModels>();
  LoadedModels& m = *core->models_;
  m.max_new_tokens_limit = options.batching.max_new_tokens_limit;
  m.encode_max_inputs = options.batching.encode_max_inputs_per_request;

  const std::optional<MatmulPrecision> precision = ParseMatmulPrecision(options.models.matmul_precision);
  if (!precision.has_value()) {
    return absl::InvalidArgumentError(
        absl::StrCat("matmul-precision: \"", options.models.matmul_precision, "\" is not f32 or bf16"));
  }
  int64_t weight_bytes = 0;  // for the memory check below
  int64_t kv_bytes = 0;
  if (!options.models.encoder_model.empty()) {
    const absl::Time start = absl::Now();
    EncoderLoadOptions load;
    load.weight_dtype = ParseDType(options.models.weight_dtype);
    load.matmul_precision = *precision;
    // Kernels for every batch size now (tens of ms at start), not inside the
    // first requests of each size.
    load.prepare_kernels = true;
    absl::StatusOr<std::unique_ptr<EncoderModel>> encoder = EncoderModel::Load(options.models.encoder_model, load);
    if (!encoder.ok()) return Prefixed("encoder-model", encoder.status());
    m.encoder = std::move(*encoder);
    m.encoder_name = ShortName(options.models.encoder_model);
    m.encode_backend = std::make_unique<EncoderBackend>(m.encoder.get());
    metrics->weight_bytes(WorkKind::kEncode).Set(static_cast<double>(m.encoder->description().weight_bytes));
    weight_bytes += m.encoder->description().weight_bytes;
    LOG(INFO) << "encoder " << m.encoder_name << " loaded from " << options.models.encoder_model << " in "
              << absl::Now() - start << ": " << m.encoder->description().architecture << ", "
              << m.encoder->description().num_layers << " layers, " << m.encoder->description().weight_bytes
              << " weight bytes, matmul precision " << options.models.matmul_precision;
  }
  if (!options.models.decoder_model.empty()) {
    const absl::Time start = absl::Now();
    DecoderLoadOptions load;
    load.weight_dtype = ParseDType(options.models.weight_dtype);
    load.matmul_precision = *precision;
    load.kv_dtype = ParseDType(options.models.kv_cache_dtype);
    load.context_length = options.models.decoder_context_length;
    load.prepare_kernels = true;  // as for the encoder
    absl::StatusOr<std::shared_ptr<const DecoderModel>> decoder = DecoderModel::Load(options.models.decoder_model, load);
    if (!decoder.ok()) return Prefixed("decoder-model", decoder.status());
    m.decoder = std::move(*decoder);
    m.decoder_name = ShortName(options.models.decoder_model);
    KvCacheOptions kv;
    kv.kv_cache_bytes = options.engine.kv_cache_bytes;
    kv.block_size = options.batching.kv_block_size;
    kv.dtype = load.kv_dtype;
    absl::StatusOr<std::unique_ptr<DecoderEngine>> engine = DecoderEngine::Create(m.decoder, kv);
    if (!engine.ok()) return Prefixed("kv-cache-bytes", engine.status());
    m.generate_backend = std::make_unique<DecoderBackend>(std::move(*engine));
    m.generate_backend->set_block_size(kv.block_size);
    metrics->weight_bytes(WorkKind::kGenerate).Set(static_cast<double>(m.decoder->description().weight_bytes));
    const KvStats stats = m.generate_backend->kv_stats();
    weight_bytes += m.decoder->description().weight_bytes;
    kv_bytes = stats.bytes_capacity;
    LOG(INFO) << "decoder " << m.decoder_name << " loaded from " << options.models.decoder_model << " in "
              << absl::Now() - start << ": " << m.decoder->description().architecture << ", "
              << m.decoder->description().num_layers << " layers, "
              << (m.decoder->description().num_experts > 0
                      ? absl::StrCat(m.decoder->description().experts_per_token, " of ",
                                     m.decoder->description().num_experts, " experts a token (all held), ")
                      : "")
              << m.decoder->description().weight_bytes << " weight bytes; KV cache " << stats.blocks_total << " blocks of " << kv.block_size << " tokens, "
              << stats.bytes_capacity << " bytes (" << stats.bytes_per_token << " bytes per token); context "
              << m.decoder->description().max_positions << " tokens" << LongRopeNote(m.decoder->config())
              << (m.generate_backend->kv_window() > 0
                      ? absl::StrCat("; a ", m.generate_backend->kv_window(),
                                     "-token sliding window on every layer: a sequence holds only its window's blocks")
                      : std::string());
    m.chat = ResolveChatSetup(options.models.chat_template, m.decoder->chat_template(), m.decoder->tokenizer());
    if (m.chat.format.has_value()) {
      LOG(INFO) << "chat template: " << ChatFormatName(*m.chat.format) << " (" << m.chat.origin << ")"
                << (m.chat.end_of_turn_ids.empty()
                        ? std::string()
                        : absl::StrCat("; a chat's answer also ends at token ", m.chat.end_of_turn_ids[0], " ",
                                       ChatEndOfTurn(*m.chat.format)));
    } else {
      LOG(WARNING) << "chat prompts refused: " << m.chat.origin;
    }
    if (!m.chat.warning.empty()) LOG(WARNING) << m.chat.warning;
    // A parser reads calls in the form a template asks for: without a
    // template that shows the tools, "auto" would never see a call.
    if (!options.models.tool_call_parser.empty() &&
        !(m.chat.format.has_value() && ChatFormatHasTools(*m.chat.format))) {
      return absl::InvalidArgumentError(absl::StrCat(
          "--tool-call-parser=", options.models.tool_call_parser, ": needs a chat template that shows tools (",
          "--chat-template=", ChatFormatNamesWithTools(), "); the chat template here is ",
          m.chat.format.has_value() ? std::string(ChatFormatName(*m.chat.format)) : std::string("none")));
    }
  }

  // The KV pool's pages are touched only as sequences fill it: a pool past
  // the container's memory would run until load grows, then be killed.
  const std::optional<CgroupLimit> memory_limit = ReadCgroupMemoryLimit();
  RETURN_IF_ERROR(CheckWeightsAndKvFit(weight_bytes, kv_bytes, memory_limit));
  if (memory_limit) {
    LOG(INFO) << "memory: weights " << weight_bytes << " + KV cache " << kv_bytes << " bytes of the "
              << static_cast<int64_t>(memory_limit->value) << "-byte limit (" << memory_limit->file << ")";
  }

  core->delivery_ = std::make_unique<DeliveryQueue>(kDeliveryWorkers);
  SchedulerOptions so;
  so.max_queue = options.queue.max_queue;
  so.encode_max_batch_size = options.batching.encode_max_batch_size;
  so.encode_max_batch_tokens = options.batching.encode_max_batch_tokens;
  so.encode_max_wait = options.batching.encode_max_wait;
  so.max_step_tokens = options.batching.max_step_tokens;
  so.max_running_sequences = options.batching.max_running_sequences;
  so.engine_threads = options.engine.threads;
  // A step's token messages go to the delivery worker together (on_event
  // stages them): one wake-up per step instead of one per token.
  so.end_of_pass = [delivery = core->delivery_.get()] { delivery->Flush(); };
  core->scheduler_ = std::make_unique<Scheduler>(so, m.encode_backend.get(), m.generate_backend.get(), metrics);
  return core;
}

InferenceCore::~InferenceCore() { Shutdown(); }

bool InferenceCore::has_encoder() const { return models_->encoder != nullptr; }
bool InferenceCore::has_decoder() const { return models_->decoder != nullptr; }
std::string InferenceCore::encoder_name() const { return models_->encoder_name; }
std::string InferenceCore::decoder_name() const { return models_->decoder_name; }

bool InferenceCore::chat_shows_tools() const {
  return models_->chat.format.has_value() && ChatFormatHasTools(*models_->chat.format);
}

void InferenceCore::Encode(const v1::EncodeRequest& request, std::shared_ptr<RequestControl> control,
                           EncodeDone done) {
  const absl::Time arrival = absl::Now();
  const std::string id = EnsureRequestId(*control, request_ids_);
  const bool log = log_requests_;
  const int64_t inputs = request.inputs_size();
  // Every answer goes through here, so each request is logged exactly once.
  done = [done = std::move(done), id, arrival, log, inputs](absl::StatusOr<v1::EncodeResponse> response) {
    RequestLogEntry e;
    e.id = id;
    e.rpc = "Encode";
    e.status = response.status();
    e.total = absl::Now() - arrival;
    e.inputs = inputs;
    if (response.ok()) {
      const v1::EncodeUsage& u = response->usage();
      e.queue = absl::Microseconds(u.queue_time_us());
      e.compute = absl::Microseconds(u.compute_time_us());
      e.prompt_tokens = u.prompt_tokens();
      e.padded_tokens = u.padded_tokens();
    }
    LogRequest(log, e);
    done(std::move(response));
  };
  if (!has_encoder()) {
    done(absl::FailedPreconditionError("no encoder model is loaded; start the server with --encoder-model DIR"));
    return;
  }
  absl::StatusOr<EncodeCall> call = ToEncodeCall(request, models_->encoder->description(), models_->encode_max_inputs);
  if (!call.ok()) {
    metrics_->RecordRejection(RejectReason::kInvalidArgument);
    done(call.status());
    return;
  }
  EncodeTask task;
  task.inputs = std::move(call->inputs);
  task.options = std::move(call->options);
  task.control = std::move(control);
  const std::string* name = &models_->encoder_name;
  DeliveryQueue* delivery = delivery_.get();
  const uint64_t key = next_request_key_.fetch_add(1, std::memory_order_relaxed);
  // Scheduler thread: only a move into the delivery queue. The response (a
  // copy of every embedding) is built and sent on the worker.
  task.done = [done, name, delivery, key](absl::StatusOr<std::vector<EncodeResult>> results,
                                          const v1::EncodeUsage& usage) {
    delivery->Post(key, [done, name, results = std::move(results), usage]() mutable {
      if (!results.ok()) {
        done(results.status());
        return;
      }
      done(ToEncodeResponse(std::move(*results), usage, *name));
    });
  };
  if (absl::Status s = scheduler_->SubmitEncode(std::move(task)); !s.ok()) done(s);
}

void InferenceCore::Generate(const v1::GenerateRequest& request, std::shared_ptr<RequestControl> control,
                             GenerateSink sink) {
  const absl::Time arrival = absl::Now();
  const std::string id = EnsureRequestId(*control, request_ids_);
  // Filled by the scheduler's final callback (below) before on_done runs;
  // empty for a request refused before it was queued.
  auto summary = std::make_shared<std::optional<GenerateSummary>>();
  sink.on_done = [on_done = std::move(sink.on_done), id, arrival, log = log_requests_,
                  summary](const absl::Status& status) {
    RequestLogEntry e;
    e.id = id;
    e.rpc = "Generate";
    e.status = status;
    e.total = absl::Now() - arrival;
    if (summary->has_value()) {
      const GenerateSummary& s = **summary;
      e.queue = s.queue_time;
      e.prompt_tokens = s.prompt_tokens;
      e.generated_tokens = s.generated_tokens;
      if (s.generated_tokens > 0) e.time_to_first_token = s.time_to_first_token;
      if (status.ok()) e.finish = FinishReasonName(s.finish_reason);
      e.peak_kv_bytes = s.peak_kv_bytes;
      e.preemptions = s.preemptions;
    }
    LogRequest(log, e);
    on_done(status);
  };
  if (!has_decoder()) {
    sink.on_done(absl::FailedPreconditionError("no decoder model is loaded; start the server with --decoder-model PATH"));
    return;
  }
  const DecoderModel& model = *models_->decoder;
  absl::StatusOr<std::vector<int32_t>> prompt =
      ToPromptIds(request, model.tokenizer(), model.max_positions(), &models_->chat);
  // A chat without a token limit may answer to the end of the context (at
  // most --max-new-tokens-limit), as vLLM and TGI do for chat; other
  // prompts keep the proto's default.
  const v1::GenerateRequest* effective = &request;
  v1::GenerateRequest with_limit;
  if (prompt.ok() && request.has_chat() && !request.sampling().has_max_new_tokens()) {
    with_limit = request;
    with_limit.mutable_sampling()->set_max_new_tokens(std::max<int>(
        1, std::min<int>(models_->max_new_tokens_limit, model.max_positions() - static_cast<int>(prompt->size()))));
    effective = &with_limit;
  }
  absl::StatusOr<GenerationParams> params =
      ToGenerationParams(*effective, model.description(), models_->max_new_tokens_limit, RandomSeed());
  if (params.ok() && request.has_chat()) params->end_of_turn_ids = models_->chat.end_of_turn_ids;
  if (!params.ok() || !prompt.ok()) {
    metrics_->RecordRejection(RejectReason::kInvalidArgument);
    sink.on_done(params.ok() ? prompt.status() : params.status());
    return;
  }
  auto stream = std::make_shared<GenerateStream>();
  stream->sink = std::move(sink);
  DeliveryQueue* delivery = delivery_.get();
  const uint64_t key = next_request_key_.fetch_add(1, std::memory_order_relaxed);
  GenerateTask task;
  task.prompt = std::move(*prompt);
  task.params = *params;
  task.control = std::move(control);
  // Both callbacks run on the scheduler thread and only copy the event (a
  // token id and a few bytes of text) into the delivery queue; the message is
  // built and written on the worker, in the order the scheduler made them.
  // Token messages are staged and reach the worker at the end of the pass
  // (SchedulerOptions::end_of_pass); the ending is posted at once, behind them.
  // The last token comes in the ending message, with finish_reason and usage,
  // so a client knows the token it reads is the last (TGI's stream shape
  // needs that; vLLM's OpenAI chunks do the same).
  const int prompt_token_count = static_cast<int>(task.prompt.size());
  if (request.return_prompt_token_ids()) stream->prompt_ids = task.prompt;
  task.on_event = [stream, delivery, key, prompt_token_count](const StepEvent& event) {
    delivery->Stage(key, [stream, event, prompt_token_count]() {
      if (!event.token_ids.empty()) stream->last_token = event.token_ids.back();
      if (event.stop_index >= 0) stream->stop_index = event.stop_index;
      v1::GenerateResponse chunk = ToGenerateChunk(event);
      if (!stream->first_sent) stream->MarkFirst(prompt_token_count, &chunk);
      if (event.finished) {
        stream->last_event = std::move(chunk);
      } else {
        stream->sink.on_chunk(std::move(chunk));
      }
    });
  };
  task.on_admitted = [stream](int cached) { stream->cached_prompt_tokens.store(cached, std::memory_order_relaxed); };
  const GenerationParams p = *params;
  task.on_done = [stream, p, delivery, key, summary_slot = summary, prompt_token_count](
                     const absl::Status& status, const GenerateSummary& summary) {
    delivery->Post(key, [stream, p, status, summary, summary_slot, prompt_token_count]() {
      *summary_slot = summary;
      if (status.ok()) {
        v1::GenerateResponse last;
        if (!stream->first_sent) stream->MarkFirst(prompt_token_count, &last);  // no token event came
        last.set_finish_reason(ToProtoFinishReason(summary.finish_reason, stream->last_token, p));
        SetStopReason(p, stream->last_token, stream->stop_index, &last);
        v1::GenerateUsage* usage = last.mutable_usage();
        usage->set_prompt_tokens(summary.prompt_tokens);
        usage->set_generated_tokens(summary.generated_tokens);
        usage->set_queue_time_us(absl::ToInt64Microseconds(summary.queue_time));
        usage->set_time_to_first_token_us(absl::ToInt64Microseconds(summary.time_to_first_token));
        usage->set_peak_kv_cache_bytes(summary.peak_kv_bytes);
        usage->set_preemptions(summary.preemptions);
        usage->set_cached_prompt_tokens(summary.cached_prompt_tokens);
        if (stream->last_event.has_value()) {
          AppendGenerateChunk(&*stream->last_event, std::move(last));
          last = std::move(*stream->last_event);
          stream->last_event.reset();
        }
        stream->sink.on_chunk(std::move(last));
      }
      if (stream->last_event.has_value()) stream->sink.on_chunk(std::move(*stream->last_event));
      stream->sink.on_done(status);
    });
  };
  // Refused: the scheduler took nothing and no job of this key was posted.
  if (absl::Status s = scheduler_->SubmitGenerate(std::move(task)); !s.ok()) stream->sink.on_done(s);
}

absl::StatusOr<v1::TokenizeResponse> InferenceCore::Tokenize(const v1::TokenizeRequest& request) const {
  const bool use_encoder =
      request.model() == v1::MODEL_KIND_ENCODER || (request.model() == v1::MODEL_KIND_UNSPECIFIED && !has_decoder());
  v1::TokenizeResponse response;
  if (request.has_chat() && !request.text().empty()) {
    return absl::InvalidArgumentError("chat: give either text or chat, not both");
  }
  if (request.has_chat() && (use_encoder || !has_decoder())) {
    return absl::InvalidArgumentError("chat: only the decoder tokenizes a conversation");
  }
  if (use_encoder) {
    if (!has_encoder()) return absl::FailedPreconditionError("model: no encoder model is loaded");
    const EncoderTokenizer& tokenizer = models_->encoder->tokenizer();
    absl::StatusOr<TextEncoding> enc = tokenizer.Encode(request.text(), request.add_special_tokens());
    if (!enc.ok()) return absl::InvalidArgumentError(absl::StrCat("text: ", enc.status().message()));
    response.mutable_token_ids()->Assign(enc->ids.begin(), enc->ids.end());
    for (std::string& piece : models_->encoder->TokenStrings(enc->ids)) response.add_tokens(std::move(piece));
    for (size_t i = 0; i < enc->ids.size(); ++i) {
      v1::TokenSpan* span = response.add_spans();
      // Added by the tokenizer's template ([CLS], [SEP]). A special token
      // written in the text is not counted special, as Hugging Face's
      // special_tokens_mask has it.
      span->set_special(!enc->special_tokens_mask.empty() && enc->special_tokens_mask[i] != 0);
      span->set_start(static_cast<int32_t>(enc->offsets[i].first));
      span->set_end(static_cast<int32_t>(enc->offsets[i].second));
    }
    return response;
  }
  if (!has_decoder()) return absl::FailedPreconditionError("model: no decoder model is loaded");
  const Tokenizer& tokenizer = models_->decoder->tokenizer();
  TokenizeOptions options;
  if (!request.add_special_tokens()) {
    options.add_bos = false;
    options.add_eos = false;
  }
  absl::StatusOr<std::vector<int32_t>> ids =
      request.has_chat() ? ChatPromptIds(request.chat(), models_->chat, tokenizer) : tokenizer.Encode(request.text(), options);
  if (!ids.ok()) {
    if (request.has_chat()) return ids.status();  // names chat.* already
    return absl::InvalidArgumentError(absl::StrCat("text: ", ids.status().message()));
  }
  response.mutable_token_ids()->Assign(ids->begin(), ids->end());
  for (int32_t id : *ids) response.add_tokens(ReplaceInvalidUtf8(tokenizer.IdToPiece(id)));
  return response;
}

absl::StatusOr<v1::DetokenizeResponse> InferenceCore::Detokenize(const v1::DetokenizeRequest& request) const {
  const bool use_encoder =
      request.model() == v1::MODEL_KIND_ENCODER || (request.model() == v1::MODEL_KIND_UNSPECIFIED && !has_decoder());
  const std::vector<int32_t> ids(request.token_ids().begin(), request.token_ids().end());
  v1::DetokenizeResponse response;
  if (use_encoder) {
    if (!has_encoder()) return absl::FailedPreconditionError("model: no encoder model is loaded");
    absl::StatusOr<std::string> text = models_->encoder->Detokenize(ids, request.skip_special_tokens());
    if (!text.ok()) return absl::InvalidArgumentError(absl::StrCat("token_ids: ", text.status().message()));
    response.set_text(ReplaceInvalidUtf8(*text));
    return response;
  }
  if (!has_decoder()) return absl::FailedPreconditionError("model: no decoder model is loaded");
  const Tokenizer& tokenizer = models_->decoder->tokenizer();
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= tokenizer.vocab_size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("token_ids[", i, "] = ", ids[i], " is out of range [0, ", tokenizer.vocab_size(), ")"));
    }
  }
  // As a stream writes the same ids: special tokens written out when asked,
  // the piece after one keeping its space ("<s> Hello", as transformers'
  // decode and llama.cpp's detokenize give).
  StreamingDetokenizer detok(tokenizer, /*prev_token=*/-1, /*write_special=*/!request.skip_special_tokens());
  std::string text;
  for (int32_t id : ids) text += detok.Push(id);
  text += detok.Flush();
  response.set_text(ReplaceInvalidUtf8(text));
  return response;
}

v1::GetModelInfoResponse InferenceCore::GetModelInfo(const v1::GetModelInfoRequest& request) const {
  v1::GetModelInfoResponse response;
  const bool want_encoder = request.model() != v1::MODEL_KIND_DECODER;
  const bool want_decoder = request.model() != v1::MODEL_KIND_ENCODER;
  if (want_encoder && has_encoder()) {
    v1::ModelInfo* info = response.add_models();
    *info = ToModelInfo(models_->encoder->description(), v1::MODEL_KIND_ENCODER);
    info->set_pooling(PoolingModeName(models_->encoder->default_pooling()));
    info->set_max_input_tokens(models_->encoder->max_tokens());
  }
  if (want_decoder && has_decoder()) {
    v1::ModelInfo* info = response.add_models();
    *info = ToModelInfo(models_->decoder->description(), v1::MODEL_KIND_DECODER);
    info->set_max_input_tokens(info->max_positions() - 1);
    if (models_->chat.format.has_value()) info->set_chat_template(std::string(ChatFormatName(*models_->chat.format)));
  }
  return response;
}

void InferenceCore::BeginDrain() { scheduler_->BeginDrain(); }
// The scheduler posts a request's final job before it counts the request
// done, so once it is idle the delivery queue holds every job left to run.
bool InferenceCore::WaitIdle(absl::Time deadline) {
  return scheduler_->WaitIdle(deadline) && delivery_->WaitEmpty(deadline);
}
int InferenceCore::InFlight() const { return scheduler_ == nullptr ? 0 : scheduler_->InFlight(); }
void InferenceCore::Shutdown() {
  // Order matters: the scheduler's shutdown posts the UNAVAILABLE endings,
  // which the delivery queue's shutdown then runs.
  if (scheduler_ != nullptr) scheduler_->Shutdown();
  if (delivery_ != nullptr) delivery_->Shutdown();
}

}  // namespace attnserve
