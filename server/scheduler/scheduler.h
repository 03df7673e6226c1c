// Scheduler: the one place that decides what the engine runs next. One
// thread (the engine loop) owns the decoder engine, its KV cache and every
// queued or running request; the doors only submit, and callbacks report back.
//
// Encode: dynamic batching (encode_batching.h). Generate: continuous
// (iteration-level) batching with chunked prefill: every step runs each
// decoding sequence's next token plus prompt chunks of prefilling ones, within
// `max_step_tokens`.
//
// Generate request states:
//
//   Submit --refuse (queue full / can never fit KV / draining)--> done(error)
//     |
//     v
//   WAITING --admit (FIFO head, running < max, free blocks for its prompt)--> PREFILL
//     ^                                                                        |
//     |  preempt (KV blocks ran out; the newest running one; blocks freed,    v
//     +---- its prompt + generated tokens recomputed later) <------------- DECODE
//                                                                               |
//   any state --cancel / deadline--> done(CANCELLED / DEADLINE_EXCEEDED)        v
//   Shutdown  --------------------> done(UNAVAILABLE)                       FINISHED
//
// Admission counts as taken both the blocks held and those a running
// sequence's prompt still needs (prefill reserves them chunk by chunk), plus
// one block of headroom per running sequence. A preempted request comes back
// first in line with its output appended to its prompt, marked as such
// (GenerationParams::resumed_tokens), so the engine resumes its RNG and its
// text where they were: preemption changes neither tokens nor text.
//
// Prefill beside decoding streams (chunked prefill with a time budget). A
// step's time grows with its prompt tokens, and every decoding stream waits
// for the whole step: a burst of new prompts in one step (16 prompts of 32
// tokens at once, say) would stall every stream for many decode steps. So
// while any sequence is decoding, the prompt tokens of one step are capped at
// what fits in one decode-only step's time (smoothed decode-only step time /
// smoothed seconds per prompt token of mixed steps), and at least
// `min_prefill_chunk` tokens so prompts always progress: a mixed step takes at
// most about twice a decode step. With no stream decoding, prompts take the
// whole `max_step_tokens` (no one's inter-token latency to protect; time to
// first token matters). Until both estimates exist the cap is
// `max_step_tokens`. The price is time to first token under load: a burst of
// prompts is spread over several steps (as in Sarathi-Serve's stall-free
// batching).
//
// Interleaving policy (encode and generate share the cores). An encode batch
// is not run whole: it is a job (EncodeBatchJob) divided into slices of
// bounded time (for BERT the embeddings, then a third of a layer each), and
// the loop alternates one generate step with the encode slices that fit in a
// time budget of one generate step:
//
//   step | slice slice slice | step | slice slice | step | ... | slice (batch done) | step
//
// The budget is the smoothed time of a generate step (on options_.clock); a
// pass runs slices while the time spent plus this batch's mean slice so far
// stays within it, and always at least one slice, so encode never starves.
// (The mean, not the longest: on a shared machine one preempted slice would
// otherwise hold a batch to one slice per step and encode would fall behind.) The gap between two tokens of a stream is therefore at most about
// two steps (one step plus one step's worth of slices), i.e. inter-token
// latency stays within about 2x of its unloaded value, as long as one slice
// is no longer than a step. For that the batch is also capped when it starts
// beside decoding streams: at most the padded tokens whose slices fit one step
// (generate step seconds / seconds per padded token of a batch's mean slice,
// smoothed over recent batches; the slices of a layer are of similar cost,
// and per-slice fixed costs make this conservative for larger batches), one
// input if a single input
// is longer (the one case a slice can exceed a step: one long input beside a
// very small decoder). Until both estimates exist the cap is
// `max_step_tokens` padded tokens. When no stream is decoding the budget is
// one slice per pass, so a new stream, a cancellation or a shutdown is
// noticed within one slice.
//
// An encode batch in flight keeps FIFO and batching semantics: its inputs
// were taken from the queue when it started, results of split requests are
// reassembled in input order when the batch finishes; a request cancelled or
// past its deadline mid-batch is answered at once (CANCELLED /
// DEADLINE_EXCEEDED) and its rows are dropped at the end, the others in the
// batch are unaffected (if nobody is left the job is abandoned); a failed
// slice fails every request in the batch; drain lets the batch finish;
// shutdown abandons it and answers its requests UNAVAILABLE. The price is
// encode latency while streams decode: encode gets about half the engine time.
//
// Thread-safe: Submit*, BeginDrain, WaitIdle and Shutdown may be called from
// any thread.
#ifndef ATTNSERVE_SERVER_SCHEDULER_SCHEDULER_H_
#define ATTNSERVE_SERVER_SCHEDULER_SCHEDULER_H_

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/core/inference_core.h"
#include "server/metrics/metrics.h"
#include "server/scheduler/backends.h"

namespace attnserve {

struct SchedulerOptions {
  int max_queue = 256;                  // waiting requests (encode + generate) before RESOURCE_EXHAUSTED
  int encode_max_batch_size = 32;       // inputs per encode batch
  int64_t encode_max_batch_tokens = 8192;  // padded tokens per encode batch
  absl::Duration encode_max_wait = absl::Milliseconds(2);  // how long a lone input waits for company
  int max_step_tokens = 512;            // tokens per generate step (decode tokens + prefill chunks)
  int max_running_sequences = 64;       // sequences holding KV blocks at once
  // Fewest prompt tokens a step carries beside decoding streams (the prefill
  // cap's floor, so prompts progress however slow a token is).
  int min_prefill_chunk = 16;
  std::function<absl::Time()> clock = [] { return absl::Now(); };
  // Called on the scheduler thread at the end of every pass, after the
  // pass's callbacks: a door that stages the callbacks' work (one token's
  // message each) hands it on here in one batch. Inside the pass's time.
  std::function<void()> end_of_pass;
  // OpenMP threads for the engine work this scheduler's thread runs, set on
  // that thread when it starts (OpenMP counts are per thread; see
  // engine/core/engine_thread.h); 0 = the runtime default.
  int engine_threads = 0;
};

struct EncodeTask {
  std::vector<EncoderInput> inputs;
  EncodeOptions options;
  std::shared_ptr<RequestControl> control;
  // Called once, on the engine thread: results in input order.
  std::function<void(absl::StatusOr<std::vector<EncodeResult>>, const v1::EncodeUsage&)> done;
};

struct GenerateSummary {
  FinishReason finish_reason = FinishReason::kNone;
  int prompt_tokens = 0;
  int generated_tokens = 0;
  absl::Duration queue_time;
  absl::Duration time_to_first_token;
  int64_t peak_kv_bytes = 0;
  int preemptions = 0;
  int cached_prompt_tokens = 0;  // taken from the prefix cache at first admission
};

struct GenerateTask {
  std::vector<int32_t> prompt;
  GenerationParams params;
  std::shared_ptr<RequestControl> control;
  // Every step that produced tokens or text (engine thread, must not block).
  // Its work may wait for SchedulerOptions::end_of_pass.
  std::function<void(const StepEvent&)> on_event;
  // Called once, on the scheduler thread, when the request is first admitted
  // (before any on_event): the prompt tokens the prefix cache gave it.
  // Optional; must not block.
  std::function<void(int cached_prompt_tokens)> on_admitted;
  // Called once at the end.
  std::function<void(const absl::Status&, const GenerateSummary&)> on_done;
};

class Scheduler {
 public:
  // Either backend may be null (that model is not loaded). Starts the thread.
  Scheduler(const SchedulerOptions& options, EncodeBackend* encode, GenerateBackend* generate,
            ServerMetrics* metrics);
  ~Scheduler();  // Shutdown()
  Scheduler(const Scheduler&) = delete;
  Scheduler& operator=(const Scheduler&) = delete;

  // OK: the task is queued and its callback will run. Otherwise the task was
  // refused at once (nothing queued, no callback): UNAVAILABLE when draining,
  // RESOURCE_EXHAUSTED when the queue is full or (generate) when the request
  // could never fit the KV cache, INVALID_ARGUMENT for bad input.
  absl::Status SubmitEncode(EncodeTask task);
  absl::Status SubmitGenerate(GenerateTask task);

  void BeginDrain();
  bool WaitIdle(absl::Time deadline);
  void Shutdown();
  // Requests submitted and not yet finished (queued or running).
  int InFlight() const;

 private:
  struct EncodeRequest;
  struct EncodeItem;
  struct EncodeBatch;
  struct GenerateRequest;

  // Refuses (draining, queue full) or counts a new request in.
  absl::Status TakeQueueSlotLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Loop();
  // One pass of the loop; false when there was nothing to do.
  bool RunOnce();
  void TakeInbox();
  void SweepCancelled();
  // Starts an encode batch if one is due and runs the slices that fit the
  // policy's budget; false when there was nothing to do.
  bool RunEncodeWork(bool generate_running);
  // Forms the next batch from the queue and starts its job (false: none due).
  bool StartEncodeBatch(bool generate_running);
  void CompleteEncodeBatch();
  void FailEncodeBatch(const absl::Status& status);
  void DropDoneEncodeItems();
  bool RunGenerateStep();
  void AdmitWaiting();
  void Preempt(GenerateRequest* victim);
  void FinishGenerate(GenerateRequest* request, const absl::Status& status);
  void FinishEncode(EncodeRequest* request, const absl::Status& status);
  void UpdateGauges();
  void FailEverything(const absl::Status& status);
  absl::Time NextEncodeDeadline() const;
  // Padded encode tokens that fit in one generate step (the policy above).
  int64_t EncodeTokensBesideGenerate() const;
  // Prompt tokens a step may carry while sequences decode (the policy above).
  int PrefillTokensBesideDecode() const;
  // Updates the step cost estimates from a step that took `seconds`.
  void LearnStepCost(double seconds, int decode_tokens, int prefill_tokens);

  const SchedulerOptions options_;
  EncodeBackend* const encode_;      // not owned; may be null
  GenerateBackend* const generate_;  // not owned; may be null
  ServerMetrics* const metrics_;     // not owned
  // Fixed at construction (read from any thread by SubmitGenerate).
  int64_t kv_capacity_bytes_ = 0;
  int64_t kv_bytes_per_token_ = 0;
  int kv_block_size_ = 1;
  int kv_window_ = 0;  // GenerateBackend::kv_window
  // Blocks a sequence of `positions` holds at most at once: all of them, or
  // with a window on every layer (released as it slides) those a step can
  // touch, the window's W - 1 keys plus a prefill chunk, + 1 for alignment.
  int64_t KvBlocksFor(int64_t positions) const;

  mutable absl::Mutex mu_;
  absl::CondVar work_cv_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<EncodeRequest>> encode_inbox_ ABSL_GUARDED_BY(mu_);
  std::vector<std::shared_ptr<GenerateRequest>> generate_inbox_ ABSL_GUARDED_BY(mu_);
  int queued_ ABSL_GUARDED_BY(mu_) = 0;     // submitted, not yet running (for max_queue)
  int in_flight_ ABSL_GUARDED_BY(mu_) = 0;  // submitted, not yet done
  bool draining_ ABSL_GUARDED_BY(mu_) = false;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  // Engine-thread state (no lock: only Loop() touches it).
  std::deque<EncodeItem> encode_queue_;
  std::unique_ptr<EncodeBatch> encode_batch_;  // the batch in flight, or null
  std::deque<std::shared_ptr<GenerateRequest>> waiting_;
  std::vector<std::shared_ptr<GenerateRequest>> running_;  // admission order, newest last
  absl::Duration engine_time_;  // engine calls in the current loop pass (for the overhead metric)
  // Smoothed costs on options_.clock (0 until the first sample): one generate
  // step, and the mean slice of an encode batch per padded token.
  double generate_step_seconds_ = 0;
  double encode_slice_seconds_per_token_ = 0;
  // Smoothed costs for the prefill cap: a step with no prompt tokens, and one
  // prompt token in a step (a mixed step's time beyond a decode-only step).
  double decode_step_seconds_ = 0;
  double prefill_seconds_per_token_ = 0;

  std::thread thread_;
};

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_SCHEDULER_SCHEDULER_H_
