#include "server/http/api_routes.h"

#include <atomic>
#include <deque>
#include <optional>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/log/log.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "server/core/api_key.h"
#include "server/core/request_log.h"
#include "server/http/gateway_util.h"
#include "server/http/json_body.h"
#include "server/http/native_api.h"
#include "server/http/openai_api.h"
#include "server/status_util.h"

namespace attnserve {
namespace {

using nlohmann::json;

constexpr char kJson[] = "application/json";
constexpr char kEventStream[] = "text/event-stream";

std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

// How often a handler waiting for the scheduler checks that its client is
// still connected. A gone client is cancelled, and the scheduler frees its KV
// blocks on its next pass.
constexpr absl::Duration kClientPoll = absl::Milliseconds(10);

// Hands the result of one Encode from the scheduler thread to the HTTP thread.
class EncodeSlot {
 public:
  void Set(absl::StatusOr<v1::EncodeResponse> result) {
    absl::MutexLock lock(&mu_);
    result_ = std::move(result);
    done_ = true;
  }
  // Blocks for the result; nullopt as soon as `client_gone` says the client
  // left (polled every kClientPoll).
  std::optional<absl::StatusOr<v1::EncodeResponse>> Wait(HttpResponseWriter& w) {
    for (;;) {
      {
        absl::MutexLock lock(&mu_);
        if (mu_.AwaitWithTimeout(absl::Condition(&done_), kClientPoll)) return std::move(result_);
      }
      if (w.ClientGone()) return std::nullopt;
    }
  }

 private:
  absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::StatusOr<v1::EncodeResponse> result_ ABSL_GUARDED_BY(mu_) = absl::UnknownError("no result");
};

// Hands the chunks of one Generate from the scheduler thread to the HTTP
// thread. The sink only queues, so the scheduler never waits on a socket.
class GenerateChannel {
 public:
  static GenerateSink SinkFor(const std::shared_ptr<GenerateChannel>& channel) {
    GenerateSink sink;
    sink.on_chunk = [channel](v1::GenerateResponse chunk) {
      absl::MutexLock lock(&channel->mu_);
      channel->chunks_.push_back(std::move(chunk));
    };
    sink.on_done = [channel](const absl::Status& status) {
      absl::MutexLock lock(&channel->mu_);
      channel->status_ = status;
      channel->done_ = true;
    };
    return sink;
  }

  enum class Got { kChunk, kEnd, kClientGone };
  // Blocks for the next chunk (kChunk) or the end (kEnd, with `*final` saying
  // how it ended); kClientGone as soon as the client has left. The client is
  // checked every kClientPoll whether or not chunks arrive: a small model
  // yields a token every millisecond, and a check made only when the queue
  // runs dry would never come for a non-streaming answer of many tokens.
  Got Next(HttpResponseWriter& w, v1::GenerateResponse* chunk, absl::Status* final) {
    for (;;) {
      const absl::Time now = absl::Now();
      if (now >= next_client_check_) {
        next_client_check_ = now + kClientPoll;
        if (w.ClientGone()) return Got::kClientGone;
      }
      {
        absl::MutexLock lock(&mu_);
        if (mu_.AwaitWithTimeout(absl::Condition(this, &GenerateChannel::Ready), kClientPoll)) {
          if (!chunks_.empty()) {
            *chunk = std::move(chunks_.front());
            chunks_.pop_front();
            return Got::kChunk;
          }
          *final = status_;
          return Got::kEnd;
        }
      }
    }
  }

 private:
  bool Ready() const ABSL_SHARED_LOCKS_REQUIRED(mu_) { return done_ || !chunks_.empty(); }

  absl::Mutex mu_;
  std::deque<v1::GenerateResponse> chunks_ ABSL_GUARDED_BY(mu_);
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status status_ ABSL_GUARDED_BY(mu_);
  absl::Time next_client_check_ = absl::InfinitePast();  // only the HTTP thread reads it
};

class Gateway {
 public:
  Gateway(GatewayBackend backend, ServerMetrics* metrics, const GatewayOptions& options)
      : backend_(std::move(backend)),
        metrics_(metrics),
        options_(options),
        auth_(options.api_key),
        started_(absl::ToUnixSeconds(absl::Now())) {}

  // True when the request may go on; else answers 401 (counted under `rpc`).
  bool Authorized(const HttpRequest& request, HttpResponseWriter& w, const char* rpc) {
    if (!auth_.enabled()) return true;
    auto it = request.headers.find("authorization");
    const absl::Status s = auth_.Check(it == request.headers.end() ? "" : it->second);
    if (s.ok()) return true;
    Finish(rpc, s);
    w.Send(401, kJson, StatusJson(s), {{"WWW-Authenticate", "Bearer"}});
    return false;
  }

  void Encode(const HttpRequest& request, HttpResponseWriter& w) {
    const std::string id = RequestId(request, w);
    absl::StatusOr<v1::EncodeRequest> parsed = ParseEncodeRequest(request.body);
    if (!parsed.ok()) return Refuse(w, "Encode", parsed.status(), id);
    auto control = NewControl(request, w, "Encode", id);
    if (control == nullptr) return;
    std::optional<absl::StatusOr<v1::EncodeResponse>> waited = RunEncode(*parsed, control, w);
    if (!waited.has_value()) return ClientGone(control, "Encode");
    absl::StatusOr<v1::EncodeResponse>& response = *waited;
    if (!response.ok()) return Fail(w, "Encode", response.status());
    Finish("Encode", absl::OkStatus());
    w.Send(200, kJson, ProtoToJson(*response));
  }

  void Embeddings(const HttpRequest& request, HttpResponseWriter& w) {
    const std::string id = RequestId(request, w);
    absl::StatusOr<EmbeddingsCall> call = ParseEmbeddingsRequest(request.body);
    if (!call.ok()) return Refuse(w, "Encode", call.status(), id);
    auto control = NewControl(request, w, "Encode", id);
    if (control == nullptr) return;
    std::optional<absl::StatusOr<v1::EncodeResponse>> waited = RunEncode(call->request, control, w);
    if (!waited.has_value()) return ClientGone(control, "Encode");
    absl::StatusOr<v1::EncodeResponse>& response = *waited;
    if (!response.ok()) return Fail(w, "Encode", WithOpenAiFieldNames(response.status()));
    Finish("Encode", absl::OkStatus());
    const std::string model = response->model().empty() ? backend_.encoder_name : response->model();
    w.Send(200, kJson, Dump(EmbeddingsResponse(*response, model, call->base64)));
  }

  void Generate(const HttpRequest& request, HttpResponseWriter& w) {
    const std::string id = RequestId(request, w);
    absl::StatusOr<v1::GenerateRequest> parsed = ParseGenerateRequest(request.body);
    if (!parsed.ok()) return Refuse(w, "Generate", parsed.status(), id);
    auto control = NewControl(request, w, "Generate", id);
    if (control == nullptr) return;
    auto channel = StartGenerate(*parsed, control);
    v1::GenerateResponse total, chunk;
    absl::Status final;
    for (;;) {
      const GenerateChannel::Got got = channel->Next(w, &chunk, &final);
      if (got == GenerateChannel::Got::kClientGone) return ClientGone(control, "Generate");
      if (got == GenerateChannel::Got::kEnd) break;
      AppendGenerateChunk(chunk, &total);
    }
    if (!final.ok()) return Fail(w, "Generate", final);
    Finish("Generate", absl::OkStatus());
    w.Send(200, kJson, ProtoToJson(total));
  }

  void GenerateStream(const HttpRequest& request, HttpResponseWriter& w) {
    const std::string id = RequestId(request, w);
    absl::StatusOr<v1::GenerateRequest> parsed = ParseGenerateRequest(request.body);
    if (!parsed.ok()) return Refuse(w, "Generate", parsed.status(), id);
    auto control = NewControl(request, w, "Generate", id);
    if (control == nullptr) return;
    Stream(w, *parsed, control, "Generate", [](const v1::GenerateResponse& chunk) {
      return SseEvent(ProtoToJson(chunk));
    }, [](const absl::Status& status) { return SseEvent(StatusJson(status), "error"); }, /*done_event=*/"");
  }

  void Completions(const HttpRequest& request, HttpResponseWriter& w) {
    const std::string id = RequestId(request, w);
    absl::StatusOr<CompletionCall> call = ParseCompletionRequest(request.body);
    if (!call.ok()) return Refuse(w, "Generate", call.status(), id);
    auto control = NewControl(request, w, "Generate", id);
    if (control == nullptr) return;
    // "cmpl-" + the request id, so the answer, X-Request-Id and the log agree.
    const CompletionIdentity completion{absl::StrCat("cmpl-", id), absl::ToUnixSeconds(absl::Now()),
                                        backend_.decoder_name};
    if (call->stream) {
      int64_t offset = 0;
      const bool logprobs = call->logprobs;
      Stream(w, call->request, control, "Generate", [&](const v1::GenerateResponse& chunk) {
        std::string event = SseEvent(Dump(CompletionChunk(chunk, completion, logprobs, offset)));
        offset += static_cast<int64_t>(chunk.text().size());
        return event;
      }, [](const absl::Status& status) {
        // OpenAI clients look for an "error" object in a data event.
        return SseEvent(StatusJson(WithOpenAiFieldNames(status)));
      }, "[DONE]");
      return;
    }
    // A batch of prompts runs as that many Generate requests, all queued at
    // once so the scheduler batches them; prompt i is logged as "<id>-<i>".
    // The first failure fails the whole answer and cancels the rest.
    std::vector<std::shared_ptr<RequestControl>> controls{control};
    for (size_t i = 1; i <= call->more.size(); ++i) {
      auto c = std::make_shared<RequestControl>();
      c->deadline = control->deadline;
      c->request_id = absl::StrCat(id, "-", i);
      controls.push_back(std::move(c));
    }
    if (!call->more.empty()) control->request_id = absl::StrCat(id, "-0");
    std::vector<std::shared_ptr<GenerateChannel>> channels{StartGenerate(call->request, control)};
    for (size_t i = 0; i < call->more.size(); ++i) channels.push_back(StartGenerate(call->more[i], controls[i + 1]));
    auto cancel_all = [&controls] {
      for (const auto& c : controls) c->cancelled.store(true);
    };
    std::vector<std::vector<v1::GenerateResponse>> per_prompt(channels.size());
    for (size_t i = 0; i < channels.size(); ++i) {
      v1::GenerateResponse chunk;
      absl::Status final;
      for (;;) {
        const GenerateChannel::Got got = channels[i]->Next(w, &chunk, &final);
        if (got == GenerateChannel::Got::kClientGone) {
          cancel_all();
          return ClientGone(control, "Generate");
        }
        if (got == GenerateChannel::Got::kEnd) break;
        per_prompt[i].push_back(std::move(chunk));
      }
      if (!final.ok()) {
        cancel_all();
        const absl::Status s = channels.size() == 1 ? final
                                                    : absl::Status(final.code(), absl::StrCat("prompt[", i, "]: ",
                                                                                              final.message()));
        return Fail(w, "Generate", WithOpenAiFieldNames(s));
      }
    }
    Finish("Generate", absl::OkStatus());
    w.Send(200, kJson, Dump(CompletionResponse(per_prompt, completion, call->logprobs)));
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

  void Models(const HttpRequest&, HttpResponseWriter& w) {
    w.Send(200, kJson, Dump(ModelsResponse({backend_.decoder_name, backend_.encoder_name}, started_)));
  }

 private:
  // Streams a Generate as server-sent events. The HTTP status is chosen when
  // the first chunk or the end arrives, so a refusal before any token (queue
  // full, invalid argument) is a plain 4xx/5xx JSON answer, not a 200 stream.
  template <typename ChunkEvent, typename ErrorEvent>
  void Stream(HttpResponseWriter& w, const v1::GenerateRequest& request, const std::shared_ptr<RequestControl>& control,
              const char* rpc, ChunkEvent chunk_event, ErrorEvent error_event, const char* done_event) {
    auto channel = StartGenerate(request, control);
    bool started = false;
    v1::GenerateResponse chunk;
    absl::Status final;
    for (;;) {
      const GenerateChannel::Got got = channel->Next(w, &chunk, &final);
      if (got == GenerateChannel::Got::kClientGone) return ClientGone(control, rpc);
      if (got == GenerateChannel::Got::kEnd) break;
      if (!started) {
        started = true;
        if (!w.StartStream(200, kEventStream)) return ClientGone(control, rpc);
      }
      if (!w.Write(chunk_event(chunk))) return ClientGone(control, rpc);
    }
    if (!started) {
      if (!final.ok()) return Fail(w, rpc, final);
      if (!w.StartStream(200, kEventStream)) return ClientGone(control, rpc);
    }
    Finish(rpc, final);
    if (!final.ok()) {
      w.Write(error_event(final));
    } else if (done_event[0] != '\0') {
      w.Write(SseEvent(done_event));
    }
    w.EndStream();
  }

  std::shared_ptr<GenerateChannel> StartGenerate(const v1::GenerateRequest& request,
                                                 const std::shared_ptr<RequestControl>& control) {
    auto channel = std::make_shared<GenerateChannel>();
    backend_.generate(request, control, GenerateChannel::SinkFor(channel));
    return channel;
  }

  // The result, or nullopt when the client left first (then the request is
  // still queued or running; the caller cancels it).
  std::optional<absl::StatusOr<v1::EncodeResponse>> RunEncode(const v1::EncodeRequest& request,
                                                              const std::shared_ptr<RequestControl>& control,
                                                              HttpResponseWriter& w) {
    auto slot = std::make_shared<EncodeSlot>();
    backend_.encode(request, control, [slot](absl::StatusOr<v1::EncodeResponse> r) { slot->Set(std::move(r)); });
    return slot->Wait(w);
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
                                             const std::string& id) {
    absl::StatusOr<absl::Time> deadline = RequestDeadline(request.headers, absl::Now());
    if (!deadline.ok()) {
      Refuse(w, rpc, deadline.status(), id);
      return nullptr;
    }
    auto control = std::make_shared<RequestControl>();
    control->deadline = *deadline;
    control->request_id = id;
    return control;
  }

  // The request's id: the client's X-Request-Id when usable, else a new one;
  // every answer to this request carries it.
  std::string RequestId(const HttpRequest& request, HttpResponseWriter& w) {
    std::optional<std::string> id;
    if (auto it = request.headers.find("x-request-id"); it != request.headers.end()) {
      id = ValidClientRequestId(it->second);
    }
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
  void Refuse(HttpResponseWriter& w, const char* rpc, const absl::Status& status, const std::string& id = "") {
    if (metrics_ != nullptr) metrics_->RecordRejection(RejectReason::kInvalidArgument);
    if (options_.log_requests && !id.empty()) {
      RequestLogEntry e;
      e.id = id;
      e.rpc = rpc;
      e.status = status;
      LOG(INFO) << FormatRequestLog(e);
    }
    Fail(w, rpc, status);
  }

  void Fail(HttpResponseWriter& w, const char* rpc, const absl::Status& status) {
    Finish(rpc, status);
    w.Send(ToHttpStatus(status.code()), kJson, StatusJson(status),
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
};

// Wraps `handler`: the API key first (401, counted as `rpc`), then other
// methods get 405 naming the allowed one.
HttpHandler Route(const char* method, const char* rpc, std::shared_ptr<Gateway> gateway,
                  void (Gateway::*handler)(const HttpRequest&, HttpResponseWriter&)) {
  return [method, rpc, gateway, handler](const HttpRequest& request, HttpResponseWriter& w) {
    if (!gateway->Authorized(request, w, rpc)) return;
    if (request.method != method) {
      w.Send(405, kJson,
             JsonError("method_not_allowed",
                       absl::StrCat(request.path, " accepts ", method, ", not ", SanitizeUtf8(request.method))),
             {{"Allow", method}});
      return;
    }
    ((*gateway).*handler)(request, w);
  };
}

}  // namespace

std::map<std::string, HttpHandler> ApiRoutes(GatewayBackend backend, ServerMetrics* metrics,
                                             const GatewayOptions& options) {
  auto gateway = std::make_shared<Gateway>(std::move(backend), metrics, options);
  std::map<std::string, HttpHandler> routes;
  routes["/v1/encode"] = Route("POST", "Encode", gateway, &Gateway::Encode);
  routes["/v1/generate"] = Route("POST", "Generate", gateway, &Gateway::Generate);
  routes["/v1/generate_stream"] = Route("POST", "Generate", gateway, &Gateway::GenerateStream);
  routes["/v1/embeddings"] = Route("POST", "Encode", gateway, &Gateway::Embeddings);
  routes["/v1/completions"] = Route("POST", "Generate", gateway, &Gateway::Completions);
  routes["/v1/models"] = Route("GET", "Models", gateway, &Gateway::Models);
  routes["/v1/tokenize"] = Route("POST", "Tokenize", gateway, &Gateway::Tokenize);
  routes["/v1/detokenize"] = Route("POST", "Detokenize", gateway, &Gateway::Detokenize);
  routes["/v1/model_info"] = Route("GET", "GetModelInfo", gateway, &Gateway::ModelInfo);
  return routes;
}

}  // namespace attnserve
