// InferenceCore: the one path every request takes, whichever door it came in
// by. The gRPC adapters and the HTTP/JSON gateway both hand it the same proto
// messages (attnserve.v1), so validation, limits and error messages are
// shared. It owns the loaded models and the scheduler (the single engine
// thread that runs encode batches and generate steps).
//
// Thread-safe. Result callbacks (GenerateSink, EncodeDone) run on a delivery
// worker (delivery_queue.h), never on the scheduler thread, in order for each
// request; immediate refusals run on the caller's thread. They should still
// not block: they hand the result to the network layer and return, and a
// slow one delays the other requests on its worker.
#ifndef ATTNSERVE_SERVER_CORE_INFERENCE_CORE_H_
#define ATTNSERVE_SERVER_CORE_INFERENCE_CORE_H_

#include <atomic>
#include <functional>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "attnserve/v1/inference.pb.h"
#include "server/core/request_log.h"
#include "server/metrics/metrics.h"
#include "server/options.h"

namespace attnserve {

// Per-request control shared between the door and the scheduler. The door
// sets `cancelled` when the client goes away; the scheduler frees the
// request's resources within one step and finishes it with CANCELLED.
struct RequestControl {
  std::atomic<bool> cancelled{false};
  absl::Time deadline = absl::InfiniteFuture();  // DEADLINE_EXCEEDED after it
  // Names the request in the log (request_log.h). Set by the door (the
  // client's id, or InferenceCore::NewRequestId) before the call; the core
  // makes one if it is empty.
  std::string request_id;
};

// Receives a Generate stream. on_chunk is called for every message in order;
// the final message (finish_reason + usage set) is delivered through on_chunk
// too, then on_done(OkStatus()). On failure only on_done(error) is called
// after whatever chunks were already sent.
struct GenerateSink {
  std::function<void(v1::GenerateResponse)> on_chunk;
  std::function<void(const absl::Status&)> on_done;
};

using EncodeDone = std::function<void(absl::StatusOr<v1::EncodeResponse>)>;

class Scheduler;
class LoadedModels;
class DeliveryQueue;

class InferenceCore {
 public:
  // Loads the models named in `options` and starts the scheduler thread.
  // Errors name the flag, the file and the reason.
  static absl::StatusOr<std::unique_ptr<InferenceCore>> Create(const ServerOptions& options,
                                                               ServerMetrics* metrics);
  ~InferenceCore();  // Shutdown()

  // A new request id (request_log.h) for a request the client did not name.
  std::string NewRequestId() { return request_ids_.Next(); }

  // Queues an Encode. `done` is called exactly once. Every Encode and
  // Generate that reaches the core is logged once when it ends (unless the
  // options turned the request log off).
  void Encode(const v1::EncodeRequest& request, std::shared_ptr<RequestControl> control, EncodeDone done);
  // Queues a Generate. `sink.on_done` is called exactly once.
  void Generate(const v1::GenerateRequest& request, std::shared_ptr<RequestControl> control, GenerateSink sink);

  absl::StatusOr<v1::TokenizeResponse> Tokenize(const v1::TokenizeRequest& request) const;
  absl::StatusOr<v1::DetokenizeResponse> Detokenize(const v1::DetokenizeRequest& request) const;
  v1::GetModelInfoResponse GetModelInfo(const v1::GetModelInfoRequest& request) const;

  bool has_encoder() const;
  bool has_decoder() const;
  // Short model names for /v1/models and responses ("" when absent).
  std::string encoder_name() const;
  std::string decoder_name() const;
  // The chat template shows tools and has tool turns (llama3.1).
  bool chat_shows_tools() const;

  // Drain: new requests get UNAVAILABLE; queued and running ones continue.
  void BeginDrain();
  // True once nothing is queued or running and every result has been handed
  // to the doors; false if `deadline` passes first.
  bool WaitIdle(absl::Time deadline);
  // Requests queued or running now (for the drain's log line).
  int InFlight() const;
  // Ends what is left with UNAVAILABLE, stops the scheduler, then delivers
  // every result still queued (each request's final status exactly once).
  // Idempotent.
  void Shutdown();

 private:
  InferenceCore() = default;
  std::unique_ptr<LoadedModels> models_;
  RequestIdMaker request_ids_{absl::Now()};
  bool log_requests_ = true;
  // Declared before the scheduler: the scheduler's callbacks post to it.
  std::unique_ptr<DeliveryQueue> delivery_;
  std::atomic<uint64_t> next_request_key_{0};  // delivery order key per request
  std::unique_ptr<Scheduler> scheduler_;
  ServerMetrics* metrics_ = nullptr;
};

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_CORE_INFERENCE_CORE_H_
