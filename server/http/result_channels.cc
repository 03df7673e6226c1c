#include "server/http/result_channels.h"

#include <utility>

#include "absl/time/clock.h"

namespace attnserve {

void EncodeSlot::Set(absl::StatusOr<v1::EncodeResponse> result) {
  absl::MutexLock lock(&mu_);
  result_ = std::move(result);
  done_ = true;
}

std::optional<absl::StatusOr<v1::EncodeResponse>> EncodeSlot::Wait(absl::FunctionRef<bool()> client_gone) {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (mu_.AwaitWithTimeout(absl::Condition(&done_), kClientPoll)) return std::move(result_);
    }
    if (client_gone()) return std::nullopt;
  }
}

GenerateSink GenerateChannel::SinkFor(const std::shared_ptr<GenerateChannel>& channel, int index) {
  GenerateSink sink;
  sink.on_chunk = [channel, index](v1::GenerateResponse chunk) {
    Event e;
    e.got = Got::kChunk;
    e.index = index;
    e.chunk = std::move(chunk);
    channel->Push(std::move(e));
  };
  sink.on_done = [channel, index](const absl::Status& status) {
    Event e;
    e.got = Got::kEnd;
    e.index = index;
    e.status = status;
    channel->Push(std::move(e));
  };
  return sink;
}

void GenerateChannel::Push(Event event) {
  absl::MutexLock lock(&mu_);
  events_.push_back(std::move(event));
}

GenerateChannel::Event GenerateChannel::Next(absl::FunctionRef<bool()> client_gone) {
  for (;;) {
    const absl::Time now = absl::Now();
    if (now >= next_client_check_) {
      next_client_check_ = now + kClientPoll;
      if (client_gone()) {
        Event gone;
        gone.got = Got::kClientGone;
        return gone;
      }
    }
    absl::MutexLock lock(&mu_);
    if (mu_.AwaitWithTimeout(absl::Condition(this, &GenerateChannel::Ready), kClientPoll)) {
      Event e = std::move(events_.front());
      events_.pop_front();
      return e;
    }
  }
}

}  // namespace attnserve
