#include "server/http/api_routes.h"

#include <atomic>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/log/log.h"
#include "absl/random/random.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "engine/core/status_macros.h"
#include "server/core/api_key.h"
#include "server/core/proto_convert.h"
#include "server/core/request_log.h"
#include "server/http/anthropic_messages.h"
#include "server/http/classify_api.h"
#include "server/http/gateway_util.h"
#include "server/http/hf_api.h"
#include "server/http/json_body.h"
#include "server/http/native_api.h"
#include "server/http/openai_api.h"
#include "server/http/openai_chat.h"
#include "server/http/openai_responses.h"
#include "server/http/result_channels.h"
#include "server/http/score_api.h"
#include "server/http/tei_tokenize.h"
#include "server/http/vllm_tokenize.h"
#include "server/status_util.h"

namespace attnserve {
namespace {

using nlohmann::json;

constexpr char kJson[] = "application/json";
constexpr char kEventStream[] = "text/event-stream";

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// Whose error shape a route answers in: attnserve's {"error": {"code",
// "message"}}, or TGI's / TEI's {"error": message, "error_type": ...}, which
// their clients read.
enum class ErrorStyle { kNative, kTgi, kTei, kAnthropic };

std::string ErrorBody(const absl::Status& status, ErrorStyle style) {
  switch (style) {
    case ErrorStyle::kTgi: return Dump(TgiError(status));
    case ErrorStyle::kTei: return Dump(TeiError(status));
    case ErrorStyle::kAnthropic: return Dump(AnthropicError(status));
    default: return StatusJson(status);
  }
}

int ErrorHttpStatus(const absl::Status& status, ErrorStyle style) {
  return style == ErrorStyle::kTgi ? TgiHttpStatus(status.code()) : ToHttpStatus(status.code());
}

// What a result channel asks between waits.
auto ClientGoneCheck(HttpResponseWriter& w) {
  return [&w] { return w.ClientGone(); };
}

class Gateway {
 public:
  Gateway(GatewayBackend backend, ServerMetrics* metrics, const GatewayOptions& options)
      : backend_(std::move(backend)),
        metrics_(metrics),
        options_(options),
        auth_(options.api_key),
        started_(absl::ToUnixSeconds(absl::Now())) {}

  // True when the request may go on; else answers 401 (counted under `rpc`).
  bool Authorized(const HttpRequest& request, HttpResponseWriter& w, const char* rpc, ErrorStyle style) {
    if (!auth_.enabled()) return true;
    auto it = request.headers.find("authorization");
    // Anthropic's clients send the key as x-api-key.
    auto x_api_key = request.headers.find("x-api-key");
    const absl::Status s =
        auth_.Check(it != request.headers.end()          ? it->second
                    : x_api_key != request.headers.end() ? absl::StrCat("Bearer ", x_api_key->second)
                                                         : "");
    if (s.ok()) return true;
    Finish(rpc, s);
    w.Send(401, kJson, ErrorBody(s, style), {{"WWW-Authenticate", "Bearer"}});
    return false;
  }

  // Holds one of the HTTP door's inference-call places while it lives.
  class CallSlot {
   public:
    explicit CallSlot(std::atomic<int>* in_flight) : in_flight_(in_flight) {}
    CallSlot(const CallSlot&) = delete;
    CallSlot& operator=(const CallSlot&) = delete;
    ~CallSlot() { in_flight_->fetch_sub(1, std::memory_order_relaxed); }

   private:
    std::atomic<int>* in_flight_;
  };

  // A place for one more inference call, or (when max_inference_calls are
  // already being served) nullopt after answering 429 with Retry-After and
  // a request id, logged, counted under `rpc` and as an http_threads
  // rejection.
  std::optional<CallSlot> TakeCallSlot(const HttpRequest& request, HttpResponseWriter& w, const char* rpc,
                                       ErrorStyle style) {
    const int now = in_flight_.fetch_add(1, std::memory_order_relaxed) + 1;
    if (options_.max_inference_calls <= 0 || now <= options_.max_inference_calls) {
      return std::optional<CallSlot>(std::in_place, &in_flight_);
    }
    in_flight_.fetch_sub(1, std::memory_order_relaxed);
    const absl::Status busy = absl::ResourceExhaustedError(absl::StrCat(
        "the HTTP door is serving ", options_.max_inference_calls,
        " inference calls, its limit (--http-threads less the threads kept for probes and metrics); retry later"));
    const std::string id = RequestId(request, w);
    if (metrics_ != nullptr) metrics_->RecordRejection(RejectReason::kHttpBusy);
    LogRefusal(id, rpc, busy);
    Fail(w, rpc, busy, style);
    return std::nullopt;
  }

  void Encode(const HttpRequest& request, HttpResponseWriter& w) {
    ServeEncode(request, w, ErrorStyle::kNative, ParseEncodeRequest(request.body), Itself,
                [](const v1::EncodeRequest&, const v1::EncodeResponse& response, const std::string&) {
                  return ProtoToJson(response);
                });
  }

  void Embeddings(const HttpRequest& request, HttpResponseWriter& w) {
    ServeEncode(
        request, w, ErrorStyle::kNative, ForEmbeddingModel(ParseEmbeddingsRequest(request.body), "/v1/embeddings"),
        [](const EmbeddingsCall& call) -> const v1::EncodeRequest& { return call.request; },
        [this](const EmbeddingsCall& call, const v1::EncodeResponse& response, const std::string&) {
          return Dump(EmbeddingsResponse(response, EncoderName(response), call.base64));
        },
        WithOpenAiFieldNames);
  }

  // vLLM's /score and /rerank, TEI's /rerank and /similarity: cosine
  // similarities of pooled embeddings, or a cross-encoder's scores of the
  // pairs when the encoder is one (score_api.h).
  void Score(const HttpRequest& request, HttpResponseWriter& w) {
    ServeScore(request, w, ErrorStyle::kNative, CrossEncoded(ParseScoreRequest(request.body)),
               [this](const ScoreCall&, const std::vector<double>& scores, const v1::EncodeResponse& response,
                      const std::string& id) {
                 return Dump(ScoreResponse(scores, response.usage().prompt_tokens(), "score-" + id,
                                           EncoderName(response), absl::ToUnixSeconds(absl::Now())));
               });
  }

  // One path, two bodies: vLLM's (Jina's, Cohere's) "documents", answered in
  // its shape, or TEI's "texts", answered and refused in TEI's.
  void Rerank(const HttpRequest& request, HttpResponseWriter& w) {
    const absl::StatusOr<json> root = ParseJsonObject(request.body);
    if (root.ok() && IsTeiRerank(*root)) {
      ServeScore(request, w, ErrorStyle::kTei, CrossEncoded(ParseTeiRerankJson(*root)),
                 [](const ScoreCall& call, const std::vector<double>& scores, const v1::EncodeResponse&,
                    const std::string&) { return Dump(TeiRerankResponse(call, scores)); });
      return;
    }
    ServeScore(request, w, ErrorStyle::kNative,
               CrossEncoded(root.ok() ? ParseRerankJson(*root) : absl::StatusOr<ScoreCall>(root.status())),
               [this](const ScoreCall& call, const std::vector<double>& scores, const v1::EncodeResponse& response,
                      const std::string& id) {
                 return Dump(RerankResponse(call, scores, response.usage().prompt_tokens(), "rerank-" + id,
                                            EncoderName(response)));
               });
  }

  void TeiSimilarity(const HttpRequest& request, HttpResponseWriter& w) {
    ServeScore(request, w, ErrorStyle::kTei, CrossEncoded(ParseSimilarityRequest(request.body)),
               [](const ScoreCall&, const std::vector<double>& scores, const v1::EncodeResponse&,
                  const std::string&) { return Dump(SimilarityResponse(scores)); });
  }

  // TEI's /predict and vLLM's /classify: an encoder with a classification
  // head labels texts (classify_api.h).
  void TeiPredict(const HttpRequest& request, HttpResponseWriter& w) {
    ServeEncode(
        request, w, ErrorStyle::kTei, ForClassifier(ParsePredictRequest(request.body), "/predict"),
        [](const ClassifyCall& call) -> const v1::EncodeRequest& { return call.request; },
        [this](const ClassifyCall& call, const v1::EncodeResponse& response,
               const std::string&) -> absl::StatusOr<std::string> {
          ASSIGN_OR_RETURN(const json body, PredictResponse(call, response, backend_.encoder_labels));
          return Dump(body);
        });
  }

  void Classify(const HttpRequest& request, HttpResponseWriter& w) {
    ServeEncode(
        request, w, ErrorStyle::kNative, ForClassifier(ParseClassifyRequest(request.body), "/classify"),
        [](const ClassifyCall& call) -> const v1::EncodeRequest& { return call.request; },
        [this](const ClassifyCall&, const v1::EncodeResponse& response,
               const std::string& id) -> absl::StatusOr<std::string> {
          ASSIGN_OR_RETURN(const json body, ClassifyResponse(response, backend_.encoder_labels, "classify-" + id,
                                                             EncoderName(response), absl::ToUnixSeconds(absl::Now())));
          return Dump(body);
        },
        WithOpenAiFieldNames);
  }

  void Generate(const HttpRequest& request, HttpResponseWriter& w) {
    const std::string id = RequestId(request, w);
    absl::StatusOr<v1::GenerateRequest> parsed = ParseGenerateRequest(request.body);
    if (!parsed.ok()) return Refuse(w, "Generate", parsed.status(), id);
    auto control = NewControl(request, w, "Generate", id);
    if (control == nullptr) return;
    auto channel = StartGenerate(*parsed, control);
    v1::GenerateResponse total;
    for (;;) {
      GenerateChannel::Event e = channel->Next(ClientGoneCheck(w));
      if (e.got == GenerateChannel::Got::kClientGone) return ClientGone(control, "Generate");
      if (e.got == GenerateChannel::Got::kEnd) {
        if (!e.status.ok()) return Fail(w, "Generate", e.status);
        break;
      }
      AppendGenerateChunk(&total, std::move(e.chunk));
    }
    Finish("Generate", absl::OkStatus());
    w.Send(200, kJson, ProtoToJson(total));
  }

  void GenerateStream(const HttpRequest& request, HttpResponseWriter& w) {
    const std::string id = RequestId(request, w);
    absl::StatusOr<v1::GenerateRequest> parsed = ParseGenerateRequest(request.body);
    if (!parsed.ok()) return Refuse(w, "Generate", parsed.status(), id);
    auto control = NewControl(request, w, "Generate", id);
    if (control == nullptr) return;
    // The HTTP status is chosen when the first chunk or the end arrives, so a
    // refusal before any token (queue full, invalid argument) is a plain
    // 4xx/5xx JSON answer, not a 200 stream.
    auto channel = StartGenerate(*parsed, control);
    bool started = false;
    absl::Status final;
    for (;;) {
      GenerateChannel::Event e = channel->Next(ClientGoneCheck(w));
      if (e.got == GenerateChannel::Got::kClientGone) return ClientGone(control, "Generate");
      if (e.got == GenerateChannel::Got::kEnd) {
        final = e.status;
        break;
      }
      if (!started) {
        started = true;
        if (!w.StartStream(200, kEventStream)) return ClientGone(control, "Generate");
      }
      if (!w.Write(SseEvent(ProtoToJson(e.chunk)))) return ClientGone(control, "Generate");
    }
    if (!started) {
      if (!final.ok()) return Fail(w, "Generate", final);
      if (!w.StartStream(200, kEventStream)) return ClientGone(control, "Generate");
    }
    Finish("Generate", final);
    if (!final.ok()) w.Write(SseEvent(StatusJson(final), "error"));
    w.EndStream();
  }

  // A completion runs one Generate per choice (prompts × n), all queued at
  // once so the scheduler batches them; with several, choice k is logged as
  // "<id>-<k>". The first failure fails the whole answer, names the prompt
  // and cancels the rest.
  void Completions(const HttpRequest& request, HttpResponseWriter& w) {
    RunCompletion(request, w, ParseCompletionRequest(request.body));
  }

  // /v1/chat/completions: the same path, a chat prompt and chat objects.
  void ChatCompletions(const HttpRequest& request, HttpResponseWriter& w) {
    absl::StatusOr<CompletionCall> call = ParseChatCompletionRequest(request.body, ChatTools());
    if (call.ok()) {
      if (absl::Status s = ApplyReasoning(&*call); !s.ok()) call = s;
    }
    RunCompletion(request, w, std::move(call));
  }

  // OpenAI's Responses API (openai_responses.h) and Anthropic's Messages
  // API (anthropic_messages.h): one chat choice under another API's shape.
  void Responses(const HttpRequest& request, HttpResponseWriter& w) {
    const std::string id = RequestId(request, w);
    absl::StatusOr<ResponsesCall> call = ParseResponsesRequest(request.body, ChatTools());
    if (!call.ok()) return Refuse(w, "Generate", call.status(), id);
    if (absl::Status s = ApplyReasoning(&call->completion); !s.ok()) return Refuse(w, "Generate", s, id);
    const ResponseIdentity identity{absl::StrCat("resp_", id), absl::ToUnixSeconds(absl::Now()),
                                    backend_.decoder_name};
    ServeChatChoice(
        request, w, ErrorStyle::kNative, id, call->completion, ResponsesStream(*call, identity),
        [&](const std::vector<v1::GenerateResponse>& chunks) { return ResponseObject(*call, chunks, identity); },
        [&](const absl::Status& s) { return WithResponsesFieldNames(s, *call); });
  }

  void AnthropicMessages(const HttpRequest& request, HttpResponseWriter& w) {
    const std::string id = RequestId(request, w);
    absl::StatusOr<AnthropicCall> call = ParseAnthropicMessagesRequest(request.body, ChatTools(), Reasoning());
    if (!call.ok()) return Refuse(w, "Generate", call.status(), id, ErrorStyle::kAnthropic);
    if (absl::Status s = ApplyReasoning(&call->completion); !s.ok()) {
      return Refuse(w, "Generate", s, id, ErrorStyle::kAnthropic);
    }
    const AnthropicIdentity identity{absl::StrCat("msg_", id), backend_.decoder_name};
    ServeChatChoice(
        request, w, ErrorStyle::kAnthropic, id, call->completion, AnthropicStream(*call, identity),
        [&](const std::vector<v1::GenerateResponse>& chunks) { return AnthropicMessage(*call, chunks, identity); },
        [&](const absl::Status& s) { return WithAnthropicFieldNames(s, *call); });
  }

  // Anthropic's /v1/messages/count_tokens: the chat prompt's tokens, at once.
  void AnthropicCountTokens(const HttpRequest& request, HttpResponseWriter& w) {
    constexpr ErrorStyle kStyle = ErrorStyle::kAnthropic;
    const absl::StatusOr<v1::TokenizeRequest> parsed = ParseAnthropicCountTokensRequest(request.body, ChatTools(), Reasoning());
    if (!parsed.ok()) return Refuse(w, "Tokenize", parsed.status(), "", kStyle);
    const absl::StatusOr<v1::TokenizeResponse> tokens = backend_.tokenize(*parsed);
    if (!tokens.ok()) return Fail(w, "Tokenize", tokens.status(), kStyle);
    Finish("Tokenize", absl::OkStatus());
    w.Send(200, kJson, Dump(json{{"input_tokens", tokens->token_ids_size()}}));
  }

  // vLLM's /tokenize and /detokenize, at once, with the decoder (else the
  // encoder) as vLLM serves its one model.
  void VllmTokenize(const HttpRequest& request, HttpResponseWriter& w) {
    if (const absl::StatusOr<json> root = ParseJsonObject(request.body); root.ok() && IsTeiTokenize(*root)) {
      return TeiTokenize(*root, w);
    }
    const v1::ModelKind model = VllmModel();
    const absl::StatusOr<VllmTokenizeCall> call = ParseVllmTokenizeRequest(request.body, model, ChatTools());
    if (!call.ok()) return Refuse(w, "Tokenize", call.status());
    const absl::StatusOr<v1::TokenizeResponse> tokens = backend_.tokenize(call->request);
    if (!tokens.ok()) return Fail(w, "Tokenize", tokens.status());
    int max_model_len = 0;
    const v1::GetModelInfoResponse loaded = backend_.model_info(v1::GetModelInfoRequest());
    for (const v1::ModelInfo& info : loaded.models()) {
      if (info.kind() == model) max_model_len = info.max_positions();
    }
    Finish("Tokenize", absl::OkStatus());
    w.Send(200, kJson, Dump(VllmTokenizeResponse(*call, *tokens, max_model_len)));
  }

  // TEI's /tokenize (its body on the shared path) and /decode, with the
  // encoder's tokenizer (tei_tokenize.h); errors in TEI's shape.
  void TeiTokenize(const json& root, HttpResponseWriter& w) {
    const absl::StatusOr<std::vector<v1::TokenizeRequest>> requests = ParseTeiTokenizeJson(root);
    if (!requests.ok()) return Refuse(w, "Tokenize", requests.status(), "", ErrorStyle::kTei);
    std::vector<v1::TokenizeResponse> responses;
    for (size_t i = 0; i < requests->size(); ++i) {
      absl::StatusOr<v1::TokenizeResponse> tokens = backend_.tokenize((*requests)[i]);
      if (!tokens.ok()) {
        return Fail(w, "Tokenize", InputNamed(tokens.status(), "text", i, requests->size()), ErrorStyle::kTei);
      }
      responses.push_back(*std::move(tokens));
    }
    const absl::StatusOr<json> body = TeiTokenizeResponse(*requests, responses);
    if (!body.ok()) return Fail(w, "Tokenize", body.status(), ErrorStyle::kTei);
    Finish("Tokenize", absl::OkStatus());
    w.Send(200, kJson, Dump(*body));
  }

  void TeiDecode(const HttpRequest& request, HttpResponseWriter& w) {
    const absl::StatusOr<std::vector<v1::DetokenizeRequest>> requests = ParseTeiDecodeRequest(request.body);
    if (!requests.ok()) return Refuse(w, "Detokenize", requests.status(), "", ErrorStyle::kTei);
    json texts = json::array();
    for (size_t i = 0; i < requests->size(); ++i) {
      const absl::StatusOr<v1::DetokenizeResponse> text = backend_.detokenize((*requests)[i]);
      if (!text.ok()) {
        return Fail(w, "Detokenize", InputNamed(text.status(), "token_ids", i, requests->size()), ErrorStyle::kTei);
      }
      texts.push_back(text->text());
    }
    Finish("Detokenize", absl::OkStatus());
    w.Send(200, kJson, Dump(texts));
  }

  // The core names its request's field (`core_field`: "text", "token_ids");
  // a TEI client sent input `index` of `count`: "inputs[2]" / "ids[2]"
  // where it sent a list.
  static absl::Status InputNamed(const absl::Status& status, absl::string_view core_field, size_t index,
                                 size_t count) {
    const absl::string_view tei_field = core_field == "text" ? "inputs" : "ids";
    const std::string name = count > 1 ? absl::StrCat(tei_field, "[", index, "]") : std::string(tei_field);
    std::string message(status.message());
    if (absl::StartsWith(message, core_field)) message = absl::StrCat(name, message.substr(core_field.size()));
    return absl::Status(status.code(), message);
  }

  void VllmDetokenize(const HttpRequest& request, HttpResponseWriter& w) {
    const absl::StatusOr<v1::DetokenizeRequest> parsed = ParseVllmDetokenizeRequest(request.body, VllmModel());
    if (!parsed.ok()) return Refuse(w, "Detokenize", parsed.status());
    const absl::StatusOr<v1::DetokenizeResponse> text = backend_.detokenize(*parsed);
    if (!text.ok()) return Fail(w, "Detokenize", text.status());
    Finish("Detokenize", absl::OkStatus());
    w.Send(200, kJson, Dump(VllmDetokenizeResponse(*text)));
  }

  void RunCompletion(const HttpRequest& request, HttpResponseWriter& w, absl::StatusOr<CompletionCall> call) {
    const std::string id = RequestId(request, w, call.ok() ? call->request_id : "");
    if (!call.ok()) return Refuse(w, "Generate", call.status(), id);
    auto control = NewControl(request, w, "Generate", id);
    if (control == nullptr) return;
    // "cmpl-" (or "chatcmpl-") + the request id, so the answer, X-Request-Id
    // and the log agree.
    const CompletionIdentity completion{absl::StrCat(call->format.chat ? "chatcmpl-" : "cmpl-", id),
                                        absl::ToUnixSeconds(absl::Now()), backend_.decoder_name};
    const size_t count = call->requests.size();
    std::vector<std::shared_ptr<RequestControl>> controls{control};
    for (size_t k = 1; k < count; ++k) {
      auto c = std::make_shared<RequestControl>();
      c->deadline = control->deadline;
      c->request_id = absl::StrCat(id, "-", k);
      controls.push_back(std::move(c));
    }
    if (count > 1) control->request_id = absl::StrCat(id, "-0");
    auto channel = std::make_shared<GenerateChannel>();
    for (size_t k = 0; k < count; ++k) {
      backend_.generate(call->requests[k], controls[k], GenerateChannel::SinkFor(channel, static_cast<int>(k)));
    }
    auto cancel_all = [&controls] {
      for (const auto& c : controls) c->cancelled.store(true);
    };
    // A choice's failure, naming its prompt when there are several.
    auto failure = [&](const GenerateChannel::Event& e) {
      const size_t prompt = static_cast<size_t>(e.index) / static_cast<size_t>(call->n);
      return WithOpenAiFieldNames(call->prompts() == 1 ? e.status
                                                       : absl::Status(e.status.code(),
                                                                      absl::StrCat("prompt[", prompt, "]: ",
                                                                                   e.status.message())));
    };
    if (call->stream) return StreamCompletion(w, *call, completion, channel, control, cancel_all, failure);
    std::vector<std::vector<v1::GenerateResponse>> per_choice(count);
    for (size_t ended = 0; ended < count;) {
      GenerateChannel::Event e = channel->Next(ClientGoneCheck(w));
      if (e.got == GenerateChannel::Got::kClientGone) {
        cancel_all();
        return ClientGone(control, "Generate");
      }
      if (e.got == GenerateChannel::Got::kChunk) {
        DropGenerated(call->format, &e.chunk);
        per_choice[e.index].push_back(std::move(e.chunk));
        continue;
      }
      if (!e.status.ok()) {
        cancel_all();
        return Fail(w, "Generate", failure(e));
      }
      ++ended;
    }
    Finish("Generate", absl::OkStatus());
    w.Send(200, kJson,
           Dump(call->format.chat ? ChatCompletionResponse(per_choice, completion, call->format)
                                  : CompletionResponse(per_choice, completion, call->format, call->requests)));
  }

  // TGI's /generate (which streams too when the body says "stream": true, as
  // huggingface_hub's InferenceClient sends to a URL) and /generate_stream.
  void TgiGenerate(const HttpRequest& request, HttpResponseWriter& w) { TgiGenerateCall(request, w, false); }
  void TgiGenerateStream(const HttpRequest& request, HttpResponseWriter& w) { TgiGenerateCall(request, w, true); }

  // TEI's /embed: a list of embeddings; /embed_all: each input's token states.
  void TeiEmbed(const HttpRequest& request, HttpResponseWriter& w) {
    ServeEncode(request, w, ErrorStyle::kTei, ForEmbeddingModel(ParseTeiEmbedRequest(request.body), "/embed"), Itself,
                [](const v1::EncodeRequest&, const v1::EncodeResponse& response, const std::string&) {
                  return Dump(TeiEmbedResponse(response));
                });
  }

  void TeiEmbedAll(const HttpRequest& request, HttpResponseWriter& w) {
    ServeEncode(request, w, ErrorStyle::kTei,
                ForEmbeddingModel(ParseTeiEmbedAllRequest(request.body), "/embed_all", /*sparse_ok=*/true), Itself,
                [](const v1::EncodeRequest&, const v1::EncodeResponse& response, const std::string&) {
                  return Dump(TeiEmbedAllResponse(response));
                });
  }

  // TEI's /embed_sparse: a SPLADE model's sparse vectors.
  void TeiEmbedSparse(const HttpRequest& request, HttpResponseWriter& w) {
    absl::StatusOr<v1::EncodeRequest> parsed = ParseTeiEmbedSparseRequest(request.body);
    if (parsed.ok()) {
      if (absl::Status usable = RequireSparseModel(backend_.encoder_sparse, "/embed_sparse"); !usable.ok()) {
        parsed = usable;
      }
    }
    ServeEncode(request, w, ErrorStyle::kTei, parsed, Itself,
                [](const v1::EncodeRequest&, const v1::EncodeResponse& response, const std::string&) {
                  return Dump(TeiEmbedSparseResponse(response));
                });
  }

  // Tokenize, Detokenize and GetModelInfo answer at once on the handler's
  // thread (no engine work), as the gRPC door does.
  void Tokenize(const HttpRequest& request, HttpResponseWriter& w) {
    AnswerAtOnce(w, "Tokenize", ParseTokenizeRequest(request.body), backend_.tokenize);
  }

  void Detokenize(const HttpRequest& request, HttpResponseWriter& w) {
    AnswerAtOnce(w, "Detokenize", ParseDetokenizeRequest(request.body), backend_.detokenize);
  }

  void ModelInfo(const HttpRequest&, HttpResponseWriter& w) {
    Finish("GetModelInfo", absl::OkStatus());
    w.Send(200, kJson, ProtoToJson(backend_.model_info(v1::GetModelInfoRequest())));
  }

  // TGI's and TEI's GET /info: the decoder's as TGI has it, else the
  // encoder's as TEI has it (one server may hold both; TGI's clients are the
  // ones that read it to bound a prompt).
  void HfInfo(const HttpRequest&, HttpResponseWriter& w) {
    const v1::GetModelInfoResponse loaded = backend_.model_info(v1::GetModelInfoRequest());
    const v1::ModelInfo* decoder = nullptr;
    const v1::ModelInfo* encoder = nullptr;
    for (const v1::ModelInfo& info : loaded.models()) {
      (info.kind() == v1::MODEL_KIND_DECODER ? decoder : encoder) = &info;
    }
    Finish("GetModelInfo", absl::OkStatus());
    if (decoder != nullptr) return w.Send(200, kJson, Dump(TgiInfo(*decoder, options_.info)));
    if (encoder != nullptr) return w.Send(200, kJson, Dump(TeiInfo(*encoder, options_.info)));
    w.Send(503, kJson, JsonError("unavailable", "no model is loaded"));
  }

  void Models(const HttpRequest&, HttpResponseWriter& w) {
    ServedModel decoder{backend_.decoder_name}, encoder{backend_.encoder_name};
    const v1::GetModelInfoResponse loaded = backend_.model_info(v1::GetModelInfoRequest());
    for (const v1::ModelInfo& info : loaded.models()) {
      (info.kind() == v1::MODEL_KIND_DECODER ? decoder : encoder).max_model_len = info.max_positions();
    }
    w.Send(200, kJson, Dump(ModelsResponse({decoder, encoder}, started_)));
  }

 private:
  // Streams a completion's choices as OpenAI chunks, interleaved as they are
  // made, each tagged with its choice index. With several choices or
  // stream_options.include_usage, a chunk of summed usage and no choices ends
  // the stream (else the single choice carries usage on its last chunk). As in GenerateStream, a failure before
  // any token is a plain error answer; after, an error event ends the stream.
  template <typename CancelAll, typename Failure>
  void StreamCompletion(HttpResponseWriter& w, const CompletionCall& call, const CompletionIdentity& completion,
                        const std::shared_ptr<GenerateChannel>& channel,
                        const std::shared_ptr<RequestControl>& control, CancelAll cancel_all, Failure failure) {
    const size_t count = call.requests.size();
    const bool usage_chunk = count > 1 || call.include_usage;
    const ChunkUsage usage =
        call.include_usage ? ChunkUsage::kNull : (count == 1 ? ChunkUsage::kOnLast : ChunkUsage::kNone);
    std::vector<int64_t> offsets(count, 0);
    std::vector<int64_t> prompt_tokens(count, 0), completion_tokens(count, 0);
    std::vector<bool> opened(count, false);
    std::vector<ChatChoiceStream> chat_streams(count);
    v1::GenerateUsage total;
    bool started = false;
    for (size_t ended = 0; ended < count;) {
      GenerateChannel::Event e = channel->Next(ClientGoneCheck(w));
      if (e.got == GenerateChannel::Got::kClientGone) {
        cancel_all();
        return ClientGone(control, "Generate");
      }
      if (e.got == GenerateChannel::Got::kEnd) {
        if (e.status.ok()) {
          ++ended;
          continue;
        }
        cancel_all();
        const absl::Status s = failure(e);
        if (!started) return Fail(w, "Generate", s);
        Finish("Generate", s);
        // OpenAI clients look for an "error" object in a data event.
        w.Write(SseEvent(StatusJson(s)));
        w.EndStream();
        return;
      }
      if (!started) {
        started = true;
        if (!w.StartStream(200, kEventStream)) {
          cancel_all();
          return ClientGone(control, "Generate");
        }
      }
      if (e.chunk.prompt_token_count() != 0) prompt_tokens[e.index] = e.chunk.prompt_token_count();
      // vLLM's continuous usage: each chunk says its choice's usage so far.
      auto so_far = [&](json chunk) {
        if (call.continuous_usage) {
          const int64_t prompt = prompt_tokens[e.index], generated = completion_tokens[e.index];
          chunk["usage"] = {{"prompt_tokens", prompt}, {"completion_tokens", generated},
                            {"total_tokens", prompt + generated}};
        }
        return Dump(chunk);
      };
      DropGenerated(call.format, &e.chunk);
      if (e.chunk.has_usage()) AddCompletionUsage(e.chunk.usage(), &total);
      std::string event;
      // A chat choice opens with a chunk naming the assistant's role.
      if (call.format.chat && !opened[e.index]) {
        event = SseEvent(so_far(ChatRoleChunk(completion, e.index, usage, call.format, e.chunk)));
      }
      opened[e.index] = true;
      completion_tokens[e.index] += e.chunk.token_ids_size();
      if (call.format.chat) {
        event += SseEvent(so_far(ChatCompletionChunk(e.chunk, completion, call.format, e.index, usage,
                                                     &chat_streams[e.index])));
      } else {
        const json chunk = CompletionChunk(e.chunk, completion, call.format, offsets[e.index], e.index, usage,
                                           &call.requests[e.index]);
        offsets[e.index] += static_cast<int64_t>(chunk["choices"][0]["text"].get_ref<const std::string&>().size());
        event = SseEvent(so_far(chunk));
      }
      if (!w.Write(event)) {
        cancel_all();
        return ClientGone(control, "Generate");
      }
    }
    if (!started && !w.StartStream(200, kEventStream)) return ClientGone(control, "Generate");
    if (usage_chunk) {
      w.Write(SseEvent(Dump(
          CompletionUsageChunk(total, completion, call.format.chat ? "chat.completion.chunk" : "text_completion"))));
    }
    Finish("Generate", absl::OkStatus());
    w.Write(SseEvent("[DONE]"));
    w.EndStream();
  }

  void TgiGenerateCall(const HttpRequest& request, HttpResponseWriter& w, bool stream_route) {
    constexpr ErrorStyle kTgi = ErrorStyle::kTgi;
    const std::string id = RequestId(request, w);
    absl::BitGen bitgen;  // the seed of a sampled request that names none
    absl::StatusOr<TgiCall> call =
        ParseTgiGenerateRequest(request.body, absl::Uniform<uint64_t>(bitgen), stream_route);
    if (!call.ok()) return Refuse(w, "Generate", call.status(), id, kTgi);
    auto control = NewControl(request, w, "Generate", id, kTgi);
    if (control == nullptr) return;
    auto channel = StartGenerate(call->request, control);
    std::vector<v1::GenerateResponse> chunks;
    int tokens = 0;
    std::string text;
    bool started = false;
    absl::Status final;
    for (;;) {
      GenerateChannel::Event e = channel->Next(ClientGoneCheck(w));
      if (e.got == GenerateChannel::Got::kClientGone) return ClientGone(control, "Generate");
      if (e.got == GenerateChannel::Got::kEnd) {
        final = e.status;
        break;
      }
      if (!call->stream) {
        chunks.push_back(std::move(e.chunk));
        continue;
      }
      // As GenerateStream: a failure before the first token is a plain error.
      if (!started) {
        started = true;
        if (!w.StartStream(200, kEventStream)) return ClientGone(control, "Generate");
      }
      for (const json& event : TgiStreamEvents(e.chunk, *call, tokens, text)) {
        if (!w.Write(SseEvent(Dump(event)))) return ClientGone(control, "Generate");
      }
      tokens += e.chunk.token_ids_size();
      text += e.chunk.text();
    }
    if (!started) {
      if (!final.ok()) return Fail(w, "Generate", final, kTgi);
      Finish("Generate", final);
      if (!call->stream) return w.Send(200, kJson, Dump(TgiGenerateResponse(chunks, *call)));
      if (!w.StartStream(200, kEventStream)) return ClientGone(control, "Generate");
      return w.EndStream();
    }
    Finish("Generate", final);
    // TGI ends a stream after the last token's event (no [DONE]); a failure
    // after the first token is a data event with the error, which its
    // clients raise.
    if (!final.ok()) w.Write(SseEvent(ErrorBody(final, kTgi)));
    w.EndStream();
  }

  std::shared_ptr<GenerateChannel> StartGenerate(const v1::GenerateRequest& request,
                                                 const std::shared_ptr<RequestControl>& control) {
    auto channel = std::make_shared<GenerateChannel>();
    backend_.generate(request, control, GenerateChannel::SinkFor(channel));
    return channel;
  }

  v1::ModelKind VllmModel() const {
    return backend_.decoder_name.empty() ? v1::MODEL_KIND_ENCODER : v1::MODEL_KIND_DECODER;
  }

  // --reasoning-parser (checked at start, server/options.cc).
  ReasoningParser Reasoning() const {
    return ReasoningParserFromName(options_.reasoning_parser).value_or(ReasoningParser::kNone);
  }
  // --reasoning-parser on a chat choice (openai_chat.h's ApplyReasoningParser).
  absl::Status ApplyReasoning(CompletionCall* call) const {
    return ApplyReasoningParser(Reasoning(), options_.structured_outputs_in_reasoning, call,
                                options_.thinking_token_budget);
  }

  ToolSupport ChatTools() const {
    // The flag was checked at start (server/options.cc).
    return ToolSupport{
        .template_shows_tools = backend_.chat_shows_tools,
        .auto_parser = AutoToolParserFromName(options_.tool_call_parser).value_or(AutoToolParser::kNone)};
  }

  // Runs `completion`'s one choice: unstreamed, answers `whole(chunks)`;
  // streamed, `events`' Start(chunk) before the first chunk's Next(chunk), no
  // [DONE]. A failure goes through `rename` (the API's field names): before
  // the first event it is a plain error answer in `style`, after it the
  // stream ends with events.Failed.
  template <typename Events, typename Whole, typename Rename>
  void ServeChatChoice(const HttpRequest& request, HttpResponseWriter& w, ErrorStyle style, const std::string& id,
                       const CompletionCall& completion, Events events, Whole whole, Rename rename) {
    auto control = NewControl(request, w, "Generate", id, style);
    if (control == nullptr) return;
    auto channel = StartGenerate(completion.requests[0], control);
    std::vector<v1::GenerateResponse> chunks;
    bool started = false;
    for (;;) {
      GenerateChannel::Event e = channel->Next(ClientGoneCheck(w));
      if (e.got == GenerateChannel::Got::kClientGone) return ClientGone(control, "Generate");
      if (e.got == GenerateChannel::Got::kEnd) {
        if (e.status.ok()) break;
        const absl::Status s = rename(WithOpenAiFieldNames(e.status));
        if (!started) return Fail(w, "Generate", s, style);
        Finish("Generate", s);
        w.Write(events.Failed(s));
        w.EndStream();
        return;
      }
      if (!completion.stream) {
        chunks.push_back(std::move(e.chunk));
        continue;
      }
      std::string out;
      if (!started) {
        started = true;
        if (!w.StartStream(200, kEventStream)) return ClientGone(control, "Generate");
        out = events.Start(e.chunk);
      }
      out += events.Next(e.chunk);
      if (!w.Write(out)) return ClientGone(control, "Generate");
    }
    Finish("Generate", absl::OkStatus());
    if (completion.stream) return w.EndStream();
    w.Send(200, kJson, whole(chunks).dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace));
  }

  static const v1::EncodeRequest& Itself(const v1::EncodeRequest& request) { return request; }
  static absl::Status AsIs(const absl::Status& status) { return status; }

  std::string EncoderName(const v1::EncodeResponse& response) const {
    return response.model().empty() ? backend_.encoder_name : response.model();
  }

  // One Encode call read from the body by a route's parser (`parsed`):
  // `request_of(call)` runs, and `answer(call, response, request id)` makes
  // the 200 body (or fails); a failure of the call goes through `rename` (the route's field names)
  // and is answered in `style`.
  template <typename Call, typename RequestOf, typename Answer, typename Rename = decltype(&AsIs)>
  void ServeEncode(const HttpRequest& request, HttpResponseWriter& w, ErrorStyle style,
                   const absl::StatusOr<Call>& parsed, RequestOf request_of, Answer answer, Rename rename = AsIs) {
    const std::string id = RequestId(request, w);
    if (!parsed.ok()) return Refuse(w, "Encode", parsed.status(), id, style);
    auto control = NewControl(request, w, "Encode", id, style);
    if (control == nullptr) return;
    std::optional<absl::StatusOr<v1::EncodeResponse>> waited = RunEncode(request_of(*parsed), control, w);
    if (!waited.has_value()) return ClientGone(control, "Encode");
    const absl::StatusOr<v1::EncodeResponse>& response = *waited;
    if (!response.ok()) return Fail(w, "Encode", rename(response.status()), style);
    absl::StatusOr<std::string> body = answer(*parsed, *response, id);
    if (!body.ok()) return Fail(w, "Encode", body.status(), style);
    Finish("Encode", absl::OkStatus());
    w.Send(200, kJson, *body);
  }

  // A parsed scoring call made a cross-encoder's when the encoder is one.
  absl::StatusOr<ScoreCall> CrossEncoded(absl::StatusOr<ScoreCall> parsed) const {
    if (!parsed.ok()) return parsed;
    RETURN_IF_ERROR(RequireDenseModel(backend_.encoder_sparse, "scoring (cosine similarity of embeddings)"));
    RETURN_IF_ERROR(UseCrossEncoder(backend_.encoder_labels, &*parsed));
    return parsed;
  }

  // A parsed embedding call, refused when the encoder is a cross-encoder
  // or (unless `sparse_ok`: /embed_all's token states) a SPLADE model.
  template <typename Call>
  absl::StatusOr<Call> ForEmbeddingModel(absl::StatusOr<Call> parsed, absl::string_view route,
                                         bool sparse_ok = false) const {
    if (!parsed.ok()) return parsed;
    RETURN_IF_ERROR(RequireEmbeddingModel(backend_.encoder_labels, route));
    if (!sparse_ok) RETURN_IF_ERROR(RequireDenseModel(backend_.encoder_sparse, route));
    return parsed;
  }

  // A parsed classify call, refused when the encoder has no head.
  absl::StatusOr<ClassifyCall> ForClassifier(absl::StatusOr<ClassifyCall> parsed, absl::string_view route) const {
    if (!parsed.ok()) return parsed;
    RETURN_IF_ERROR(RequireClassifier(backend_.encoder_labels, route));
    return parsed;
  }

  // A scoring call: the pairs' scores (score_api.h), answered by
  // `answer(call, scores, response, request id)`.
  template <typename Answer>
  void ServeScore(const HttpRequest& request, HttpResponseWriter& w, ErrorStyle style,
                  const absl::StatusOr<ScoreCall>& parsed, Answer answer) {
    ServeEncode(
        request, w, style, parsed, [](const ScoreCall& call) -> const v1::EncodeRequest& { return call.request; },
        [&answer](const ScoreCall& call, const v1::EncodeResponse& response,
                  const std::string& id) -> absl::StatusOr<std::string> {
          ASSIGN_OR_RETURN(const std::vector<double> scores, PairScores(call, response));
          return answer(call, scores, response, id);
        },
        [&parsed](const absl::Status& status) { return WithScoreFieldNames(status, *parsed); });
  }

  // The result, or nullopt when the client left first (then the request is
  // still queued or running; the caller cancels it).
  std::optional<absl::StatusOr<v1::EncodeResponse>> RunEncode(const v1::EncodeRequest& request,
                                                              const std::shared_ptr<RequestControl>& control,
                                                              HttpResponseWriter& w) {
    auto slot = std::make_shared<EncodeSlot>();
    backend_.encode(request, control, [slot](absl::StatusOr<v1::EncodeResponse> r) { slot->Set(std::move(r)); });
    return slot->Wait(ClientGoneCheck(w));
  }

  // A parsed request answered by one synchronous backend call.
  template <typename Request, typename Call>
  void AnswerAtOnce(HttpResponseWriter& w, const char* rpc, const absl::StatusOr<Request>& parsed,
                    const Call& call) {
    if (!parsed.ok()) return Refuse(w, rpc, parsed.status());
    const auto response = call(*parsed);
    if (!response.ok()) return Fail(w, rpc, response.status());
    Finish(rpc, absl::OkStatus());
    w.Send(200, kJson, ProtoToJson(*response));
  }

  // The request's control with its deadline, or null after answering 400 for
  // a malformed deadline header.
  std::shared_ptr<RequestControl> NewControl(const HttpRequest& request, HttpResponseWriter& w, const char* rpc,
                                             const std::string& id, ErrorStyle style = ErrorStyle::kNative) {
    absl::StatusOr<absl::Time> deadline = RequestDeadline(request.headers, absl::Now());
    if (!deadline.ok()) {
      Refuse(w, rpc, deadline.status(), id, style);
      return nullptr;
    }
    auto control = std::make_shared<RequestControl>();
    control->deadline = *deadline;
    control->request_id = id;
    return control;
  }

  // The request's id: the client's X-Request-Id when usable, else a new one;
  // every answer to this request carries it.
  // The client's X-Request-Id when usable, else `body_id` (a body's own
  // request id, vLLM's), else a new one.
  std::string RequestId(const HttpRequest& request, HttpResponseWriter& w, const std::string& body_id = "") {
    std::optional<std::string> id;
    if (auto it = request.headers.find("x-request-id"); it != request.headers.end()) {
      id = ValidClientRequestId(it->second);
    }
    if (!id && !body_id.empty()) id = body_id;
    if (!id) id = backend_.new_request_id ? backend_.new_request_id() : own_ids_.Next();
    w.AddHeader("X-Request-Id", *id);
    return *id;
  }

  // The client went away (mid-stream, or while a non-streaming request
  // waited): cancel so the scheduler frees the request's KV blocks; the
  // channel (or slot) outlives this handler.
  void ClientGone(const std::shared_ptr<RequestControl>& control, const char* rpc) {
    control->cancelled.store(true);
    Finish(rpc, absl::CancelledError("client disconnected"));
  }

  // A JSON-shape error found by the gateway itself (the core never sees the
  // request, so the gateway logs it when it has an id: Encode and Generate).
  void Refuse(HttpResponseWriter& w, const char* rpc, const absl::Status& status, const std::string& id = "",
              ErrorStyle style = ErrorStyle::kNative) {
    if (metrics_ != nullptr) metrics_->RecordRejection(RejectReason::kInvalidArgument);
    if (!id.empty()) LogRefusal(id, rpc, status);
    Fail(w, rpc, status, style);
  }

  // The request log's line for a request the gateway refused itself.
  void LogRefusal(const std::string& id, const char* rpc, const absl::Status& status) {
    if (!options_.log_requests) return;
    RequestLogEntry e;
    e.id = id;
    e.rpc = rpc;
    e.status = status;
    LOG(INFO) << FormatRequestLog(e);
  }

  void Fail(HttpResponseWriter& w, const char* rpc, const absl::Status& status,
            ErrorStyle style = ErrorStyle::kNative) {
    Finish(rpc, status);
    w.Send(ErrorHttpStatus(status, style), kJson, ErrorBody(status, style),
           ErrorHeaders(status, options_.retry_after_seconds));
  }

  void Finish(const char* rpc, const absl::Status& status) {
    if (metrics_ != nullptr) metrics_->RecordRequest(rpc, status.code());
  }

  const GatewayBackend backend_;
  ServerMetrics* const metrics_;
  const GatewayOptions options_;
  const ApiKeyCheck auth_;
  const int64_t started_;
  RequestIdMaker own_ids_{absl::Now()};  // when the backend makes none
  std::atomic<int> in_flight_{0};         // inference calls being served
};

// Whether a route's calls last as long as inference does (and so count
// against GatewayOptions::max_inference_calls) or answer at once.
enum class CallKind { kInference, kQuick };

// Wraps `handler`: the API key first (401, counted as `rpc`), then other
// methods get 405 naming the allowed one, then an inference call takes one
// of the door's places (429 when none is free).
HttpHandler Route(const char* method, const char* rpc, CallKind kind, std::shared_ptr<Gateway> gateway,
                  void (Gateway::*handler)(const HttpRequest&, HttpResponseWriter&),
                  ErrorStyle style = ErrorStyle::kNative) {
  return [method, rpc, kind, gateway, handler, style](const HttpRequest& request, HttpResponseWriter& w) {
    if (!gateway->Authorized(request, w, rpc, style)) return;
    if (request.method != method) {
      w.Send(405, kJson,
             JsonError("method_not_allowed",
                       absl::StrCat(request.path, " accepts ", method, ", not ", SanitizeUtf8(request.method))),
             {{"Allow", method}});
      return;
    }
    if (kind == CallKind::kQuick) return ((*gateway).*handler)(request, w);
    std::optional<Gateway::CallSlot> slot = gateway->TakeCallSlot(request, w, rpc, style);
    if (!slot.has_value()) return;
    ((*gateway).*handler)(request, w);
  };
}

}  // namespace

std::map<std::string, HttpHandler> ApiRoutes(GatewayBackend backend, ServerMetrics* metrics,
                                             const GatewayOptions& options) {
  auto gateway = std::make_shared<Gateway>(std::move(backend), metrics, options);
  std::map<std::string, HttpHandler> routes;
  using enum CallKind;
  routes["/v1/encode"] = Route("POST", "Encode", kInference, gateway, &Gateway::Encode);
  routes["/v1/generate"] = Route("POST", "Generate", kInference, gateway, &Gateway::Generate);
  routes["/v1/generate_stream"] = Route("POST", "Generate", kInference, gateway, &Gateway::GenerateStream);
  routes["/v1/embeddings"] = Route("POST", "Encode", kInference, gateway, &Gateway::Embeddings);
  routes["/v1/completions"] = Route("POST", "Generate", kInference, gateway, &Gateway::Completions);
  routes["/v1/chat/completions"] = Route("POST", "Generate", kInference, gateway, &Gateway::ChatCompletions);
  routes["/v1/responses"] = Route("POST", "Generate", kInference, gateway, &Gateway::Responses);
  routes["/v1/messages"] =
      Route("POST", "Generate", kInference, gateway, &Gateway::AnthropicMessages, ErrorStyle::kAnthropic);
  routes["/v1/messages/count_tokens"] =
      Route("POST", "Tokenize", kQuick, gateway, &Gateway::AnthropicCountTokens, ErrorStyle::kAnthropic);
  routes["/v1/models"] = Route("GET", "Models", kQuick, gateway, &Gateway::Models);
  routes["/v1/tokenize"] = Route("POST", "Tokenize", kQuick, gateway, &Gateway::Tokenize);
  routes["/v1/detokenize"] = Route("POST", "Detokenize", kQuick, gateway, &Gateway::Detokenize);
  routes["/tokenize"] = Route("POST", "Tokenize", kQuick, gateway, &Gateway::VllmTokenize);
  routes["/detokenize"] = Route("POST", "Detokenize", kQuick, gateway, &Gateway::VllmDetokenize);
  routes["/v1/model_info"] = Route("GET", "GetModelInfo", kQuick, gateway, &Gateway::ModelInfo);
  routes["/info"] = Route("GET", "GetModelInfo", kQuick, gateway, &Gateway::HfInfo);
  // For clients written for Hugging Face's TGI and TEI (their paths, bodies
  // and error shape).
  routes["/generate"] = Route("POST", "Generate", kInference, gateway, &Gateway::TgiGenerate, ErrorStyle::kTgi);
  routes["/generate_stream"] =
      Route("POST", "Generate", kInference, gateway, &Gateway::TgiGenerateStream, ErrorStyle::kTgi);
  routes["/embed"] = Route("POST", "Encode", kInference, gateway, &Gateway::TeiEmbed, ErrorStyle::kTei);
  routes["/embed_all"] = Route("POST", "Encode", kInference, gateway, &Gateway::TeiEmbedAll, ErrorStyle::kTei);
  routes["/embed_sparse"] =
      Route("POST", "Encode", kInference, gateway, &Gateway::TeiEmbedSparse, ErrorStyle::kTei);
  routes["/similarity"] = Route("POST", "Encode", kInference, gateway, &Gateway::TeiSimilarity, ErrorStyle::kTei);
  routes["/decode"] = Route("POST", "Detokenize", kQuick, gateway, &Gateway::TeiDecode, ErrorStyle::kTei);
  routes["/predict"] = Route("POST", "Encode", kInference, gateway, &Gateway::TeiPredict, ErrorStyle::kTei);
  for (const char* path : {"/classify", "/v1/classify"}) {
    routes[path] = Route("POST", "Encode", kInference, gateway, &Gateway::Classify);
  }
  // vLLM's scoring routes (rerank in Jina's and Cohere's shape; /v2/rerank is
  // the path Cohere's v2 client posts to).
  for (const char* path : {"/score", "/v1/score"}) {
    routes[path] = Route("POST", "Encode", kInference, gateway, &Gateway::Score);
  }
  for (const char* path : {"/rerank", "/v1/rerank", "/v2/rerank"}) {
    routes[path] = Route("POST", "Encode", kInference, gateway, &Gateway::Rerank);
  }
  // Every API route counted and timed by route and status class.
  if (metrics != nullptr) {
    std::vector<std::string> paths;
    for (const auto& [path, handler] : routes) paths.push_back(path);
    metrics->RegisterHttpRoutes(paths);
    for (auto& [path, handler] : routes) {
      handler = [route = path, inner = std::move(handler), metrics](const HttpRequest& request,
                                                                    HttpResponseWriter& w) {
        const absl::Time start = absl::Now();
        inner(request, w);
        metrics->RecordHttpRequest(route, w.status(), absl::ToDoubleSeconds(absl::Now() - start));
      };
    }
  }
  return routes;
}

}  // namespace attnserve
