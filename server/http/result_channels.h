// Hand-over points between the scheduler's delivery worker and an HTTP
// handler thread: the worker only queues (it never waits on a socket), the
// handler blocks for what arrives and checks its client between waits.
#ifndef ATTNSERVE_SERVER_HTTP_RESULT_CHANNELS_H_
#define ATTNSERVE_SERVER_HTTP_RESULT_CHANNELS_H_

#include <deque>
#include <memory>
#include <optional>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "attnserve/v1/inference.pb.h"
#include "server/core/inference_core.h"

namespace attnserve {

// How often a handler waiting for the scheduler checks that its client is
// still connected. A gone client is cancelled, and the scheduler frees its KV
// blocks on its next pass.
inline constexpr absl::Duration kClientPoll = absl::Milliseconds(10);

// The result of one Encode.
class EncodeSlot {
 public:
  void Set(absl::StatusOr<v1::EncodeResponse> result);
  // Blocks for the result; nullopt as soon as `client_gone` says the client
  // left (asked every kClientPoll).
  std::optional<absl::StatusOr<v1::EncodeResponse>> Wait(absl::FunctionRef<bool()> client_gone);

 private:
  absl::Mutex mu_;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  absl::StatusOr<v1::EncodeResponse> result_ ABSL_GUARDED_BY(mu_) = absl::UnknownError("no result");
};

// The chunks of one or more Generate requests (a completion with several
// choices runs one per choice), in the order they arrive, each tagged with
// its stream's index.
class GenerateChannel {
 public:
  // The sink for stream `index` of `channel`.
  static GenerateSink SinkFor(const std::shared_ptr<GenerateChannel>& channel, int index = 0);

  enum class Got { kChunk, kEnd, kClientGone };
  struct Event {
    Got got = Got::kEnd;
    int index = 0;               // the stream it came from
    v1::GenerateResponse chunk;  // kChunk
    absl::Status status;         // kEnd: how that stream ended
  };

  // Blocks for the next event of any stream: a chunk, or a stream's end
  // (each stream ends exactly once); kClientGone as soon as `client_gone`
  // says the client left. The client is asked every kClientPoll whether or
  // not chunks arrive: a small model yields a token every millisecond, and a
  // check made only when the queue runs dry would never come for a
  // non-streaming answer of many tokens.
  Event Next(absl::FunctionRef<bool()> client_gone);

 private:
  void Push(Event event);
  bool Ready() const ABSL_SHARED_LOCKS_REQUIRED(mu_) { return !events_.empty(); }

  absl::Mutex mu_;
  std::deque<Event> events_ ABSL_GUARDED_BY(mu_);
  absl::Time next_client_check_ = absl::InfinitePast();  // only the handler's thread uses it
};

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_RESULT_CHANNELS_H_
