#include "server/grpc/inference_service.h"

#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "absl/synchronization/mutex.h"
#include "server/core/proto_convert.h"
#include "server/core/request_log.h"
#include "server/status_util.h"

namespace attnserve {
namespace {

// A unary call finished later by the scheduler; OnCancel marks the request.
class CancellableUnaryReactor final : public grpc::ServerUnaryReactor {
 public:
  explicit CancellableUnaryReactor(std::shared_ptr<RequestControl> control) : control_(std::move(control)) {}
  void OnCancel() override { control_->cancelled.store(true); }
  void OnDone() override { delete this; }

 private:
  std::shared_ptr<RequestControl> control_;
};

// The Generate stream: messages from the core's delivery worker are queued
// and written one at a time (the next starts in OnWriteDone); Finish follows
// the last write. State shared with the core's callbacks outlives the
// reactor, which deletes itself in OnDone.
class GenerateReactor final : public grpc::ServerWriteReactor<v1::GenerateResponse> {
 public:
  struct Shared {
    absl::Mutex mu;
    GenerateReactor* reactor ABSL_GUARDED_BY(mu) = nullptr;  // null after OnDone
    std::deque<v1::GenerateResponse> pending ABSL_GUARDED_BY(mu);
    bool writing ABSL_GUARDED_BY(mu) = false;
    std::optional<absl::Status> final_status ABSL_GUARDED_BY(mu);
    bool finished ABSL_GUARDED_BY(mu) = false;
  };

  GenerateReactor(std::shared_ptr<RequestControl> control, ServerMetrics* metrics)
      : control_(std::move(control)), metrics_(metrics), shared_(std::make_shared<Shared>()) {
    absl::MutexLock lock(&shared_->mu);
    shared_->reactor = this;
  }

  GenerateSink MakeSink() {
    std::shared_ptr<Shared> shared = shared_;
    GenerateSink sink;
    sink.on_chunk = [shared](v1::GenerateResponse chunk) {
      absl::MutexLock lock(&shared->mu);
      if (shared->reactor == nullptr || shared->finished) return;
      shared->pending.push_back(std::move(chunk));
      shared->reactor->Pump();
    };
    sink.on_done = [shared](const absl::Status& status) {
      absl::MutexLock lock(&shared->mu);
      if (shared->reactor == nullptr || shared->final_status.has_value()) return;
      shared->final_status = status;
      shared->reactor->Pump();
    };
    return sink;
  }

  void OnWriteDone(bool ok) override {
    absl::MutexLock lock(&shared_->mu);
    shared_->writing = false;
    if (!ok) {
      // The client is gone: stop writing, let the scheduler free the request.
      control_->cancelled.store(true);
      shared_->pending.clear();
    }
    Pump();
  }

  void OnCancel() override { control_->cancelled.store(true); }

  void OnDone() override {
    {
      absl::MutexLock lock(&shared_->mu);
      shared_->reactor = nullptr;
    }
    delete this;
  }

 private:
  // Starts the next write, or Finish once everything is written.
  void Pump() ABSL_EXCLUSIVE_LOCKS_REQUIRED(shared_->mu) {
    if (shared_->writing || shared_->finished) return;
    if (!shared_->pending.empty()) {
      current_ = std::move(shared_->pending.front());
      shared_->pending.pop_front();
      // What queued while the last write was in flight goes out as one
      // message: a client or connection that falls behind catches up with
      // fewer, larger messages instead of one per token.
      while (!shared_->pending.empty()) {
        AppendGenerateChunk(&current_, std::move(shared_->pending.front()));
        shared_->pending.pop_front();
      }
      shared_->writing = true;
      StartWrite(&current_);
      return;
    }
    if (shared_->final_status.has_value()) {
      shared_->finished = true;
      metrics_->RecordRequest("Generate", shared_->final_status->code());
      Finish(ToGrpcStatus(*shared_->final_status));
    }
  }

  std::shared_ptr<RequestControl> control_;
  ServerMetrics* metrics_;
  std::shared_ptr<Shared> shared_;
  v1::GenerateResponse current_;  // the message being written
};

// A stream refused before it starts (no API key): finishes at once.
class RefusedWriteReactor final : public grpc::ServerWriteReactor<v1::GenerateResponse> {
 public:
  explicit RefusedWriteReactor(const absl::Status& status) { Finish(ToGrpcStatus(status)); }
  void OnDone() override { delete this; }
};

}  // namespace

absl::Status InferenceService::Authorize(const grpc::CallbackServerContext& context) const {
  if (!auth_.enabled()) return absl::OkStatus();
  const auto& metadata = context.client_metadata();
  auto it = metadata.find("authorization");
  return auth_.Check(it == metadata.end() ? absl::string_view()
                                          : absl::string_view(it->second.data(), it->second.size()));
}

std::shared_ptr<RequestControl> InferenceService::NewControl(grpc::CallbackServerContext& context) {
  auto control = std::make_shared<RequestControl>();
  control->deadline = DeadlineOf(context);
  std::optional<std::string> id;
  const auto& metadata = context.client_metadata();
  if (auto it = metadata.find("x-request-id"); it != metadata.end()) {
    id = ValidClientRequestId(absl::string_view(it->second.data(), it->second.size()));
  }
  control->request_id = id ? *id : core_->NewRequestId();
  // Before the core is called: a refusal may finish the call at once.
  context.AddInitialMetadata("x-request-id", control->request_id);
  return control;
}

absl::Time DeadlineOf(const grpc::CallbackServerContext& context) {
  const auto deadline = context.deadline();
  // gRPC reports "no deadline" as a time far in the future.
  if (deadline > std::chrono::system_clock::now() + std::chrono::hours(24 * 365)) return absl::InfiniteFuture();
  return absl::FromChrono(deadline);
}

grpc::ServerUnaryReactor* InferenceService::FinishUnary(grpc::CallbackServerContext* context, const char* rpc,
                                                        const absl::Status& status) {
  metrics_->RecordRequest(rpc, status.code());
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(ToGrpcStatus(status));
  return reactor;
}

grpc::ServerUnaryReactor* InferenceService::Encode(grpc::CallbackServerContext* context,
                                                   const v1::EncodeRequest* request, v1::EncodeResponse* response) {
  if (absl::Status s = Authorize(*context); !s.ok()) return FinishUnary(context, "Encode", s);
  std::shared_ptr<RequestControl> control = NewControl(*context);
  auto* reactor = new CancellableUnaryReactor(control);
  ServerMetrics* metrics = metrics_;
  core_->Encode(*request, control, [reactor, response, metrics](absl::StatusOr<v1::EncodeResponse> result) {
    const absl::Status status = result.status();
    if (result.ok()) *response = std::move(*result);
    metrics->RecordRequest("Encode", status.code());
    reactor->Finish(ToGrpcStatus(status));
  });
  return reactor;
}

grpc::ServerWriteReactor<v1::GenerateResponse>* InferenceService::Generate(grpc::CallbackServerContext* context,
                                                                           const v1::GenerateRequest* request) {
  if (absl::Status s = Authorize(*context); !s.ok()) {
    metrics_->RecordRequest("Generate", s.code());
    return new RefusedWriteReactor(s);
  }
  std::shared_ptr<RequestControl> control = NewControl(*context);
  auto* reactor = new GenerateReactor(control, metrics_);
  core_->Generate(*request, control, reactor->MakeSink());
  return reactor;
}

grpc::ServerUnaryReactor* InferenceService::Tokenize(grpc::CallbackServerContext* context,
                                                     const v1::TokenizeRequest* request,
                                                     v1::TokenizeResponse* response) {
  if (absl::Status s = Authorize(*context); !s.ok()) return FinishUnary(context, "Tokenize", s);
  absl::StatusOr<v1::TokenizeResponse> result = core_->Tokenize(*request);
  if (result.ok()) *response = std::move(*result);
  return FinishUnary(context, "Tokenize", result.status());
}

grpc::ServerUnaryReactor* InferenceService::Detokenize(grpc::CallbackServerContext* context,
                                                       const v1::DetokenizeRequest* request,
                                                       v1::DetokenizeResponse* response) {
  if (absl::Status s = Authorize(*context); !s.ok()) return FinishUnary(context, "Detokenize", s);
  absl::StatusOr<v1::DetokenizeResponse> result = core_->Detokenize(*request);
  if (result.ok()) *response = std::move(*result);
  return FinishUnary(context, "Detokenize", result.status());
}

grpc::ServerUnaryReactor* InferenceService::GetModelInfo(grpc::CallbackServerContext* context,
                                                         const v1::GetModelInfoRequest* request,
                                                         v1::GetModelInfoResponse* response) {
  if (absl::Status s = Authorize(*context); !s.ok()) return FinishUnary(context, "GetModelInfo", s);
  *response = core_->GetModelInfo(*request);
  return FinishUnary(context, "GetModelInfo", absl::OkStatus());
}

}  // namespace attnserve
