#include "server/scheduler/scheduler.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

#include "absl/log/log.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engine/core/build_info.h"
#include "engine/core/status_macros.h"
#include "engine/ops/packed_gemm.h"
#include "server/metrics/process_stats.h"
#include "server/scheduler/encode_batching.h"

namespace attnserve {

struct Scheduler::EncodeRequest {
  EncodeTask task;
  std::string options_key;
  std::vector<int> lengths;  // tokens per input
  std::vector<EncodeResult> results;
  int remaining = 0;
  absl::Time arrival;
  bool started = false;
  bool done = false;
  int64_t padded_tokens = 0;
  absl::Duration compute;
};

struct Scheduler::EncodeItem {
  std::shared_ptr<EncodeRequest> request;
  int index = 0;
};

struct Scheduler::EncodeBatch {
  std::vector<EncodeItem> items;  // in the job's input order
  std::vector<int> lengths;       // tokens per input
  int longest = 0;
  std::unique_ptr<EncodeBatchJob> job;
  absl::Duration compute;        // its slices so far, on options_.clock

  int64_t padded_tokens() const { return std::max<int64_t>(1, int64_t{longest} * static_cast<int64_t>(items.size())); }
};

struct Scheduler::GenerateRequest {
  GenerateTask task;
  absl::Time arrival;
  std::vector<int32_t> generated;  // every token streamed so far (kept across preemptions)
  std::optional<SeqId> seq;        // set while it holds KV blocks
  int prompt_len_now = 0;          // prompt of the current engine sequence
  int fed = 0;                     // of it, positions already computed (or taken from the prefix cache)
  int cached_prompt_tokens = 0;    // positions the prefix cache gave at first admission
  bool started = false;
  bool done = false;
  absl::Time first_token, last_token, prefill_start, decode_start;
  int preemptions = 0;
  int64_t peak_kv_bytes = 0;
  FinishReason finish_reason = FinishReason::kNone;

  bool prefilling() const { return fed < prompt_len_now; }
  RequestPhase phase() const {
    if (!seq.has_value()) return generated.empty() ? RequestPhase::kQueued : RequestPhase::kDecode;
    return prefilling() && generated.empty() ? RequestPhase::kPrefill : RequestPhase::kDecode;
  }
};

namespace {

std::string OptionsKey(const EncodeOptions& o) {
  return absl::StrCat(static_cast<int>(o.pooling), "|", o.normalize.has_value() ? (*o.normalize ? 1 : 0) : 2, "|",
                      o.truncate, "|", o.return_hidden_states, "|", absl::StrJoin(o.attention_layers, ","), "|",
                      o.attention_average_heads);
}

double Seconds(absl::Duration d) { return absl::ToDoubleSeconds(d); }

// Weight of the newest sample in the running cost estimates: recent enough to
// follow load changes, smooth enough that one odd step does not swing it.
constexpr double kCostSmoothing = 0.25;
double Smooth(double estimate, double sample) {
  return estimate <= 0 ? sample : estimate + kCostSmoothing * (sample - estimate);
}

// CANCELLED or DEADLINE_EXCEEDED when the request should stop, else OK.
absl::Status ControlStatus(const RequestControl* control, absl::Time now, const char* where) {
  if (control == nullptr) return absl::OkStatus();
  if (control->cancelled.load()) return absl::CancelledError(absl::StrCat("request cancelled by the client ", where));
  if (now > control->deadline) return absl::DeadlineExceededError(absl::StrCat("deadline exceeded ", where));
  return absl::OkStatus();
}

}  // namespace

Scheduler::Scheduler(const SchedulerOptions& options, EncodeBackend* encode, GenerateBackend* generate,
                     ServerMetrics* metrics)
    : options_(options), encode_(encode), generate_(generate), metrics_(metrics) {
  if (generate_ != nullptr) {
    const KvStats kv = generate_->kv_stats();
    kv_capacity_bytes_ = kv.bytes_capacity;
    kv_bytes_per_token_ = kv.bytes_per_token;
    kv_block_size_ = generate_->block_size();
    kv_window_ = generate_->kv_window();
  }
  thread_ = std::thread([this] { Loop(); });
  // Named for profiles and `top -H` (15 characters at most). The engine's
  // OpenMP workers stay unnamed: they are the other busy threads.
  pthread_setname_np(thread_.native_handle(), "attnserve-sched");
}

Scheduler::~Scheduler() { Shutdown(); }

int64_t Scheduler::KvBlocksFor(int64_t positions) const {
  const int64_t bs = kv_block_size_;
  const int64_t all = (positions + bs - 1) / bs;
  if (kv_window_ <= 0) return all;
  // A step with p positions cached and n new holds blocks floor((p - W + 1) / bs)
  // to ceil((p + n) / bs) - 1: at most ceil((W - 1 + n) / bs) + 1 of them.
  const int64_t span = int64_t{kv_window_} - 1 + options_.max_step_tokens;
  return std::min(all, (span + bs - 1) / bs + 1);
}

absl::Status Scheduler::SubmitEncode(EncodeTask task) {
  if (encode_ == nullptr) {
    return absl::FailedPreconditionError("no encoder model is loaded; start the server with --encoder-model DIR");
  }
  if (task.inputs.empty()) {
    metrics_->RecordRejection(RejectReason::kInvalidArgument);
    return absl::InvalidArgumentError("inputs: at least one input is required");
  }
  auto request = std::make_shared<EncodeRequest>();
  request->lengths.reserve(task.inputs.size());
  for (size_t i = 0; i < task.inputs.size(); ++i) {
    absl::StatusOr<int> n = encode_->CountTokens(task.inputs[i], task.options);
    if (!n.ok()) {
      metrics_->RecordRejection(RejectReason::kInvalidArgument);
      return absl::Status(n.status().code(), absl::StrCat("inputs[", i, "]: ", n.status().message()));
    }
    request->lengths.push_back(*n);
  }
  request->options_key = OptionsKey(task.options);
  request->results.resize(task.inputs.size());
  request->remaining = static_cast<int>(task.inputs.size());
  request->arrival = options_.clock();
  request->task = std::move(task);
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(TakeQueueSlotLocked());
  encode_inbox_.push_back(std::move(request));
  return absl::OkStatus();
}

absl::Status Scheduler::SubmitGenerate(GenerateTask task) {
  if (generate_ == nullptr) {
    return absl::FailedPreconditionError("no decoder model is loaded; start the server with --decoder-model PATH");
  }
  if (task.prompt.empty()) {
    metrics_->RecordRejection(RejectReason::kInvalidArgument);
    return absl::InvalidArgumentError("prompt: at least one token is required");
  }
  // Admission against the KV budget: what the request can need at most, in
  // whole blocks. One that can never fit is refused now; one that fits later
  // waits in the queue.
  const int64_t tokens = static_cast<int64_t>(task.prompt.size()) + task.params.max_new_tokens;
  const int64_t blocks = KvBlocksFor(tokens);
  const int64_t bytes = blocks * kv_block_size_ * kv_bytes_per_token_;
  if (bytes > kv_capacity_bytes_) {
    metrics_->RecordRejection(RejectReason::kKvBudget);
    return absl::ResourceExhaustedError(absl::StrCat(
        "the request needs up to ", bytes, " bytes of KV cache (prompt ", task.prompt.size(), " + max_new_tokens ",
        task.params.max_new_tokens, " = ", tokens, " tokens, ", blocks, " blocks of ", kv_block_size_,
        kv_window_ > 0 ? absl::StrCat(" held at once under the ", kv_window_, "-token sliding window") : "",
        ") but the whole cache holds ", kv_capacity_bytes_, " bytes (--kv-cache-bytes); shorten the prompt or "
        "lower max_new_tokens"));
  }
  auto request = std::make_shared<GenerateRequest>();
  request->arrival = options_.clock();
  request->task = std::move(task);
  absl::MutexLock lock(&mu_);
  RETURN_IF_ERROR(TakeQueueSlotLocked());
  generate_inbox_.push_back(std::move(request));
  return absl::OkStatus();
}

absl::Status Scheduler::TakeQueueSlotLocked() {
  if (draining_ || stopping_) {
    metrics_->RecordRejection(RejectReason::kDraining);
    return absl::UnavailableError("the server is draining and accepts no new requests");
  }
  if (queued_ >= options_.max_queue) {
    metrics_->RecordRejection(RejectReason::kQueueFull);
    return absl::ResourceExhaustedError(absl::StrCat("the queue is full: ", queued_, " requests waiting (--max-queue=",
                                                     options_.max_queue, "); retry later"));
  }
  ++queued_;
  ++in_flight_;
  return absl::OkStatus();
}

void Scheduler::BeginDrain() {
  absl::MutexLock lock(&mu_);
  draining_ = true;
}

int Scheduler::InFlight() const {
  absl::MutexLock lock(&mu_);
  return in_flight_;
}

bool Scheduler::WaitIdle(absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  return mu_.AwaitWithDeadline(absl::Condition(
                                   +[](int* n) { return *n == 0; }, &in_flight_),
                               deadline);
}

void Scheduler::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void Scheduler::TakeInbox() {
  std::vector<std::shared_ptr<EncodeRequest>> encode;
  std::vector<std::shared_ptr<GenerateRequest>> generate;
  {
    absl::MutexLock lock(&mu_);
    encode.swap(encode_inbox_);
    generate.swap(generate_inbox_);
  }
  for (auto& request : encode) {
    for (int i = 0; i < static_cast<int>(request->lengths.size()); ++i) encode_queue_.push_back({request, i});
  }
  for (auto& request : generate) {
    request->prompt_len_now = static_cast<int>(request->task.prompt.size());
    waiting_.push_back(std::move(request));
  }
}

void Scheduler::Loop() {
  SetEngineThreads(options_.engine_threads);
  metrics_->SetSchedulerThread(CurrentThreadId());
  for (;;) {
    TakeInbox();
    bool stopping;
    {
      absl::MutexLock lock(&mu_);
      stopping = stopping_;
    }
    if (stopping) {
      FailEverything(absl::UnavailableError("the server shut down before the request finished"));
      UpdateGauges();
      if (options_.end_of_pass) options_.end_of_pass();
      return;
    }
    // Scheduler overhead: the pass's wall time minus its engine calls, on the
    // real clock (options_.clock may be a test's fake).
    const absl::Time pass_start = absl::Now();
    engine_time_ = absl::ZeroDuration();
    if (RunOnce()) {
      const absl::Duration pass = absl::Now() - pass_start;
      const absl::Duration overhead = std::max(absl::ZeroDuration(), pass - engine_time_);
      metrics_->scheduler_overhead().Observe(Seconds(overhead));
      if (pass > absl::ZeroDuration()) metrics_->scheduler_overhead_ratio().Observe(absl::FDivDuration(overhead, pass));
      continue;
    }
    // Nothing ran: sleep until new work arrives, the oldest encode input's
    // wait ends, or a short poll for cancellations and deadlines of requests
    // that are waiting (e.g. for KV blocks).
    absl::Time wake = absl::InfiniteFuture();
    if (!encode_queue_.empty()) wake = std::min(wake, NextEncodeDeadline());
    if (!waiting_.empty() || !running_.empty() || !encode_queue_.empty()) {
      wake = std::min(wake, absl::Now() + absl::Milliseconds(10));
    }
    absl::MutexLock lock(&mu_);
    auto has_work = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
      return stopping_ || !encode_inbox_.empty() || !generate_inbox_.empty();
    };
    mu_.AwaitWithDeadline(absl::Condition(&has_work), wake);
  }
}

bool Scheduler::RunOnce() {
  SweepCancelled();
  AdmitWaiting();
  bool did = false;
  if (!running_.empty()) did = RunGenerateStep();
  did = RunEncodeWork(!running_.empty()) || did;
  UpdateGauges();
  if (options_.end_of_pass) options_.end_of_pass();
  return did;
}

absl::Time Scheduler::NextEncodeDeadline() const {
  return encode_queue_.front().request->arrival + options_.encode_max_wait;
}

void Scheduler::SweepCancelled() {
  const absl::Time now = options_.clock();
  for (const EncodeItem& item : encode_queue_) {
    if (item.request->done) continue;
    const absl::Status s = ControlStatus(item.request->task.control.get(), now, "while queued");
    if (!s.ok()) {
      metrics_->RecordCancellation(RequestPhase::kQueued, 0, 0);
      FinishEncode(item.request.get(), s);
    }
  }
  DropDoneEncodeItems();
  if (encode_batch_ != nullptr) {
    // Mid-batch: answer at once; the row is dropped when the batch ends.
    bool anyone_left = false;
    std::vector<std::pair<std::shared_ptr<EncodeRequest>, absl::Status>> gone;
    for (const EncodeItem& item : encode_batch_->items) {
      if (item.request->done) continue;
      const bool seen = std::any_of(gone.begin(), gone.end(), [&](const auto& g) { return g.first == item.request; });
      if (seen) continue;  // a request split over several rows is answered once
      absl::Status s = ControlStatus(item.request->task.control.get(), now, "while encoding");
      if (s.ok()) {
        anyone_left = true;
        continue;
      }
      gone.emplace_back(item.request, std::move(s));
    }
    // Nobody wants its results: stop computing. The job is released before
    // the answers go out, so a caller that sees its request finished (and the
    // scheduler idle) never races the job's teardown.
    if (!anyone_left) encode_batch_.reset();
    for (auto& [request, s] : gone) {
      metrics_->RecordCancellation(RequestPhase::kPrefill, 0, 0);
      FinishEncode(request.get(), s);
    }
    DropDoneEncodeItems();  // the cancelled requests' inputs still queued
  }
  auto sweep = [&](auto& list, const char* where) {
    for (auto& request : list) {
      if (request->done) continue;
      const absl::Status s = ControlStatus(request->task.control.get(), now, where);
      if (!s.ok()) FinishGenerate(request.get(), s);
    }
    list.erase(std::remove_if(list.begin(), list.end(), [](const auto& r) { return r->done; }), list.end());
  };
  sweep(waiting_, "while queued");
  sweep(running_, "while running");
}

void Scheduler::AdmitWaiting() {
  if (waiting_.empty()) return;
  const KvStats kv = generate_->kv_stats();
  auto blocks_for = [this](int64_t positions) { return KvBlocksFor(positions); };
  // Free = not held, not promised to the rest of a running sequence's prompt
  // (its prefill reserves blocks chunk by chunk, so they are not yet in
  // blocks_used), less one block of headroom per running sequence for its
  // next tokens. Without the promise a sequence admitted onto blocks another
  // one's prompt still needs made every step fail; preempting it freed
  // nothing, so it was admitted again at once: the scheduler spun (millions
  // of preemptions a second) with every stream stalled.
  int64_t free_blocks = kv.blocks_total - kv.blocks_used - static_cast<int64_t>(running_.size());
  for (const auto& r : running_) {
    if (!r->prefilling()) continue;
    const int64_t held = generate_->SequenceKv(*r->seq).num_blocks;
    free_blocks -= std::max<int64_t>(0, blocks_for(r->prompt_len_now + 1) - held);
  }
  while (!waiting_.empty() && static_cast<int>(running_.size()) < options_.max_running_sequences) {
    std::shared_ptr<GenerateRequest> request = waiting_.front();
    std::vector<int32_t> prompt = request->task.prompt;
    prompt.insert(prompt.end(), request->generated.begin(), request->generated.end());
    const int64_t need = blocks_for(static_cast<int64_t>(prompt.size()) + 1);
    // FIFO: nobody overtakes the head, so nobody starves. When nothing runs
    // the head is always tried (it fits the whole cache, checked at Submit).
    if (need > free_blocks && !running_.empty()) break;
    waiting_.pop_front();
    GenerationParams params = request->task.params;
    params.max_new_tokens -= static_cast<int>(request->generated.size());
    // Its output so far ends the prompt; the engine resumes its RNG and text
    // there, so a preempted request streams what it would have alone.
    params.resumed_tokens = static_cast<int>(request->generated.size());
    // Prompt logprobs went out with the first token; a preempted request
    // recomputing its prompt does not score it again.
    if (!request->generated.empty()) params.prompt_logprobs = false;
    const int prompt_len = static_cast<int>(prompt.size());
    absl::StatusOr<SeqId> seq = generate_->AddSequence(std::move(prompt), std::move(params));
    if (!seq.ok()) {
      FinishGenerate(request.get(), seq.status());
      continue;
    }
    const absl::Time now = options_.clock();
    request->seq = *seq;
    request->prompt_len_now = prompt_len;
    request->fed = generate_->CachedPromptTokens(*seq);
    if (!request->started) {
      request->cached_prompt_tokens = request->fed;
      if (request->task.on_admitted) request->task.on_admitted(request->fed);
    }
    metrics_->prefix_cache_query_tokens().Increment(prompt_len);
    metrics_->prefix_cache_hit_tokens().Increment(request->fed);
    if (!request->started) {
      request->started = true;
      request->prefill_start = now;
      metrics_->queue_time(WorkKind::kGenerate).Observe(Seconds(now - request->arrival));
      absl::MutexLock lock(&mu_);
      --queued_;
    }
    free_blocks -= need;
    running_.push_back(std::move(request));
  }
}

bool Scheduler::RunGenerateStep() {
  int decoding = 0;
  for (const auto& r : running_) decoding += r->prefilling() ? 0 : 1;
  int budget = std::max(0, options_.max_step_tokens - decoding);
  if (decoding > 0) budget = std::min(budget, PrefillTokensBesideDecode());
  std::vector<StepItem> items;
  int step_tokens = 0;
  for (const auto& r : running_) {
    if (r->prefilling()) {
      const int chunk = std::min(r->prompt_len_now - r->fed, budget);
      if (chunk <= 0) continue;
      budget -= chunk;
      step_tokens += chunk;
      items.push_back({*r->seq, chunk});
    } else {
      step_tokens += 1;
      items.push_back({*r->seq, 1});
    }
  }
  if (items.empty()) return false;

  const absl::Time start = options_.clock();
  const absl::Time engine_start = absl::Now();
  absl::StatusOr<std::vector<StepEvent>> events = generate_->Step(items);
  engine_time_ += absl::Now() - engine_start;
  const absl::Time end = options_.clock();
  if (!events.ok()) {
    if (absl::IsResourceExhausted(events.status()) && running_.size() > 1) {
      // Out of KV blocks: preempt the newest running sequence and retry.
      Preempt(running_.back().get());
      return true;
    }
    LOG(WARNING) << "generate step failed for " << items.size() << " sequences: " << events.status();
    for (const StepItem& item : items) {
      for (auto& r : running_) {
        if (r->seq == item.seq) FinishGenerate(r.get(), events.status());
      }
    }
    running_.erase(std::remove_if(running_.begin(), running_.end(), [](const auto& r) { return r->done; }),
                   running_.end());
    return true;
  }
  metrics_->step_duration(WorkKind::kGenerate).Observe(Seconds(end - start));
  generate_step_seconds_ = Smooth(generate_step_seconds_, Seconds(end - start));
  LearnStepCost(Seconds(end - start), decoding, step_tokens - decoding);
  metrics_->batch_size(WorkKind::kGenerate).Observe(static_cast<double>(items.size()));
  metrics_->step_tokens().Observe(step_tokens);

  for (const StepEvent& ev : *events) {
    auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& r) { return r->seq == ev.seq; });
    if (it == running_.end()) continue;
    GenerateRequest* r = it->get();
    r->fed += ev.prompt_tokens_fed;
    metrics_->tokens_prompt().Increment(ev.prompt_tokens_fed);
    if (!ev.token_ids.empty()) {
      if (r->generated.empty()) {
        r->first_token = end;
        r->decode_start = end;
        metrics_->time_to_first_token().Observe(Seconds(end - r->arrival));
      } else {
        metrics_->inter_token_latency().Observe(Seconds(end - r->last_token));
      }
      r->last_token = end;
      r->generated.insert(r->generated.end(), ev.token_ids.begin(), ev.token_ids.end());
      metrics_->tokens_generated().Increment(static_cast<double>(ev.token_ids.size()));
    }
    r->peak_kv_bytes = std::max(r->peak_kv_bytes, generate_->SequenceKv(ev.seq).peak_bytes);
    if ((!ev.token_ids.empty() || !ev.text.empty()) && r->task.on_event) r->task.on_event(ev);
    if (ev.finished) {
      r->finish_reason = ev.finish_reason;
      FinishGenerate(r, absl::OkStatus());
    }
  }
  running_.erase(std::remove_if(running_.begin(), running_.end(), [](const auto& r) { return r->done; }),
                 running_.end());
  return true;
}

void Scheduler::Preempt(GenerateRequest* victim) {
  LOG(INFO) << "KV cache full: preempting sequence " << *victim->seq << " (" << victim->generated.size()
            << " tokens generated; recomputed when blocks free up)";
  victim->peak_kv_bytes = std::max(victim->peak_kv_bytes, generate_->SequenceKv(*victim->seq).peak_bytes);
  generate_->Release(*victim->seq);
  victim->seq.reset();
  victim->fed = 0;
  ++victim->preemptions;
  metrics_->preemptions().Increment();
  auto it = std::find_if(running_.begin(), running_.end(), [&](const auto& r) { return r.get() == victim; });
  waiting_.push_front(*it);  // first in line when blocks free up
  running_.erase(it);
}

bool Scheduler::RunEncodeWork(bool generate_running) {
  if (encode_batch_ == nullptr) {
    if (!StartEncodeBatch(generate_running)) return false;
    if (encode_batch_ == nullptr) return true;  // it failed to start; its requests are answered
  }
  // The budget (the policy in scheduler.h): one generate step's time while
  // streams decode, else one slice.
  absl::Duration spent;
  for (;;) {
    EncodeBatch& batch = *encode_batch_;
    const absl::Time start = options_.clock();
    const absl::Time engine_start = absl::Now();
    const absl::Status status = batch.job->RunSlice();
    engine_time_ += absl::Now() - engine_start;
    const absl::Duration took = options_.clock() - start;
    batch.compute += took;
    spent += took;
    if (!status.ok()) {
      FailEncodeBatch(status);
      return true;
    }
    if (batch.job->slices_done() >= batch.job->slices_total()) {
      CompleteEncodeBatch();
      return true;
    }
    // The next slice is predicted by this batch's mean slice, not its
    // longest: on a shared machine one preempted slice would otherwise hold
    // the batch to one slice per step and encode would fall behind.
    const absl::Duration mean_slice = batch.compute / batch.job->slices_done();
    if (!generate_running || Seconds(spent + mean_slice) > generate_step_seconds_) return true;
  }
}

bool Scheduler::StartEncodeBatch(bool generate_running) {
  if (encode_queue_.empty()) return false;
  const absl::Time now = options_.clock();
  bool draining;
  {
    absl::MutexLock lock(&mu_);
    draining = draining_;
  }
  const bool full = static_cast<int>(encode_queue_.size()) >= options_.encode_max_batch_size;
  if (!full && !draining && now < NextEncodeDeadline()) return false;

  BatchLimits limits{options_.encode_max_batch_size, options_.encode_max_batch_tokens};
  if (generate_running) limits.max_batch_tokens = std::min(limits.max_batch_tokens, EncodeTokensBesideGenerate());
  std::vector<QueuedInput> view;
  const size_t window = std::min<size_t>(encode_queue_.size(), static_cast<size_t>(limits.max_batch_size) * 8);
  view.reserve(window);
  for (size_t i = 0; i < window; ++i) {
    const EncodeItem& item = encode_queue_[i];
    view.push_back({&item.request->options_key, item.request->lengths[item.index]});
  }
  const std::vector<int> picked = PickEncodeBatch(view, limits);

  auto batch = std::make_unique<EncodeBatch>();
  std::vector<EncoderInput> inputs;
  for (int i : picked) {
    batch->items.push_back(encode_queue_[i]);
    inputs.push_back(encode_queue_[i].request->task.inputs[encode_queue_[i].index]);
    batch->lengths.push_back(view[i].num_tokens);
  }
  for (auto it = picked.rbegin(); it != picked.rend(); ++it) encode_queue_.erase(encode_queue_.begin() + *it);
  batch->longest = *std::max_element(batch->lengths.begin(), batch->lengths.end());

  for (EncodeItem& item : batch->items) {
    if (!item.request->started) {
      item.request->started = true;
      metrics_->queue_time(WorkKind::kEncode).Observe(Seconds(now - item.request->arrival));
      absl::MutexLock lock(&mu_);
      --queued_;
    }
  }
  metrics_->batch_size(WorkKind::kEncode).Observe(static_cast<double>(batch->items.size()));
  metrics_->encode_padding_ratio().Observe(PaddingRatio(batch->lengths));
  metrics_->scratch_bytes(ScratchPart::kEncodeBatch).Set(std::max<double>(
      metrics_->scratch_bytes(ScratchPart::kEncodeBatch).Value(),
      static_cast<double>(encode_->ScratchBytes(static_cast<int>(batch->items.size()), batch->longest))));

  const absl::Time engine_start = absl::Now();
  absl::StatusOr<std::unique_ptr<EncodeBatchJob>> job =
      encode_->StartBatch(inputs, batch->items.front().request->task.options);
  engine_time_ += absl::Now() - engine_start;
  encode_batch_ = std::move(batch);
  if (!job.ok()) {
    FailEncodeBatch(job.status());
    return true;
  }
  encode_batch_->job = *std::move(job);
  return true;
}

void Scheduler::CompleteEncodeBatch() {
  std::unique_ptr<EncodeBatch> batch = std::move(encode_batch_);
  const absl::Time engine_start = absl::Now();
  absl::StatusOr<std::vector<EncodeResult>> results = batch->job->Finish();
  engine_time_ += absl::Now() - engine_start;
  if (!results.ok()) {
    encode_batch_ = std::move(batch);
    FailEncodeBatch(results.status());
    return;
  }
  metrics_->step_duration(WorkKind::kEncode).Observe(Seconds(batch->compute));
  const double mean_slice = Seconds(batch->compute) / std::max(1, batch->job->slices_total());
  encode_slice_seconds_per_token_ =
      Smooth(encode_slice_seconds_per_token_, mean_slice / static_cast<double>(batch->padded_tokens()));
  int64_t real_tokens = 0;
  std::vector<const EncodeRequest*> charged;  // the batch's time counts once per request
  for (size_t i = 0; i < batch->items.size(); ++i) {
    EncodeRequest* r = batch->items[i].request.get();
    real_tokens += batch->lengths[i];
    if (r->done) continue;  // cancelled or failed meanwhile: its row is dropped
    r->results[batch->items[i].index] = std::move((*results)[i]);
    r->padded_tokens += batch->longest;
    if (std::find(charged.begin(), charged.end(), r) == charged.end()) {
      charged.push_back(r);
      r->compute += batch->compute;
    }
    if (--r->remaining == 0) FinishEncode(r, absl::OkStatus());
  }
  metrics_->tokens_encoded().Increment(static_cast<double>(real_tokens));
}

void Scheduler::FailEncodeBatch(const absl::Status& status) {
  // A failed batch fails every request in it, explicitly.
  std::unique_ptr<EncodeBatch> batch = std::move(encode_batch_);
  LOG(WARNING) << "encode batch of " << batch->items.size() << " inputs failed: " << status;
  for (EncodeItem& item : batch->items) FinishEncode(item.request.get(), status);
  DropDoneEncodeItems();  // their other inputs, still queued
}

void Scheduler::DropDoneEncodeItems() {
  encode_queue_.erase(std::remove_if(encode_queue_.begin(), encode_queue_.end(),
                                     [](const EncodeItem& item) { return item.request->done; }),
                      encode_queue_.end());
}

int64_t Scheduler::EncodeTokensBesideGenerate() const {
  if (generate_step_seconds_ <= 0 || encode_slice_seconds_per_token_ <= 0) return options_.max_step_tokens;
  const double tokens = generate_step_seconds_ / encode_slice_seconds_per_token_;
  return std::max<int64_t>(1, static_cast<int64_t>(std::min(tokens, 1e9)));
}

int Scheduler::PrefillTokensBesideDecode() const {
  if (decode_step_seconds_ <= 0 || prefill_seconds_per_token_ <= 0) return options_.max_step_tokens;
  const double tokens = decode_step_seconds_ / prefill_seconds_per_token_;
  return std::max(options_.min_prefill_chunk, static_cast<int>(std::min(tokens, 1e9)));
}

void Scheduler::LearnStepCost(double seconds, int decode_tokens, int prefill_tokens) {
  if (prefill_tokens == 0) {
    decode_step_seconds_ = Smooth(decode_step_seconds_, seconds);
    return;
  }
  if (decode_tokens > 0 && decode_step_seconds_ > 0) {
    // A mixed step: what it took beyond a decode-only step, per prompt token.
    // (A step no slower than a decode step says nothing about prompt cost.)
    const double extra = seconds - decode_step_seconds_;
    if (extra > 0) prefill_seconds_per_token_ = Smooth(prefill_seconds_per_token_, extra / prefill_tokens);
  } else if (decode_tokens == 0 && prefill_seconds_per_token_ <= 0) {
    // A first estimate from a prompt-only step: its fixed cost counted per
    // token overestimates the cost, which only makes the first cap smaller.
    prefill_seconds_per_token_ = seconds / prefill_tokens;
  }
}

void Scheduler::FinishEncode(EncodeRequest* request, const absl::Status& status) {
  if (request->done) return;
  request->done = true;
  const absl::Time now = options_.clock();
  v1::EncodeUsage usage;
  int64_t prompt_tokens = 0;
  for (int n : request->lengths) prompt_tokens += n;
  usage.set_prompt_tokens(prompt_tokens);
  usage.set_padded_tokens(request->padded_tokens);
  usage.set_compute_time_us(absl::ToInt64Microseconds(request->compute));
  usage.set_queue_time_us(absl::ToInt64Microseconds(now - request->arrival - request->compute));
  metrics_->request_duration(WorkKind::kEncode).Observe(Seconds(now - request->arrival));
  metrics_->prompt_tokens(WorkKind::kEncode).Observe(static_cast<double>(prompt_tokens));
  {
    absl::MutexLock lock(&mu_);
    if (!request->started) --queued_;
  }
  if (status.ok()) {
    request->task.done(std::move(request->results), usage);
  } else {
    request->task.done(status, usage);
  }
  request->results.clear();
  absl::MutexLock lock(&mu_);
  --in_flight_;
}

void Scheduler::FinishGenerate(GenerateRequest* request, const absl::Status& status) {
  if (request->done) return;
  request->done = true;
  const absl::Time now = options_.clock();
  const RequestPhase phase = request->phase();
  int64_t reclaimed = 0;
  if (request->seq.has_value()) {
    const KvSequenceStats kv = generate_->SequenceKv(*request->seq);
    reclaimed = kv.bytes;
    request->peak_kv_bytes = std::max(request->peak_kv_bytes, kv.peak_bytes);
    generate_->Release(*request->seq);
    request->seq.reset();
  }
  if (absl::IsCancelled(status) || absl::IsDeadlineExceeded(status)) {
    metrics_->RecordCancellation(phase, reclaimed, request->fed + static_cast<int64_t>(request->generated.size()));
  }
  GenerateSummary summary;
  summary.finish_reason = request->finish_reason;
  summary.prompt_tokens = static_cast<int>(request->task.prompt.size());
  summary.generated_tokens = static_cast<int>(request->generated.size());
  summary.queue_time = (request->started ? request->prefill_start : now) - request->arrival;
  summary.time_to_first_token = request->generated.empty() ? absl::ZeroDuration() : request->first_token - request->arrival;
  summary.peak_kv_bytes = request->peak_kv_bytes;
  summary.preemptions = request->preemptions;
  summary.cached_prompt_tokens = request->cached_prompt_tokens;
  metrics_->request_duration(WorkKind::kGenerate).Observe(Seconds(now - request->arrival));
  metrics_->prompt_tokens(WorkKind::kGenerate).Observe(summary.prompt_tokens);
  if (status.ok()) {
    metrics_->generated_tokens().Observe(summary.generated_tokens);
    if (request->started) {
      const absl::Time prefill_end = request->generated.empty() ? now : request->first_token;
      metrics_->prefill_duration().Observe(Seconds(prefill_end - request->prefill_start));
    }
    if (!request->generated.empty()) metrics_->decode_duration().Observe(Seconds(now - request->decode_start));
  }
  {
    absl::MutexLock lock(&mu_);
    if (!request->started) --queued_;
  }
  if (request->task.on_done) request->task.on_done(status, summary);
  absl::MutexLock lock(&mu_);
  --in_flight_;
}

void Scheduler::FailEverything(const absl::Status& status) {
  if (encode_batch_ != nullptr) {
    std::vector<EncodeItem> items = std::move(encode_batch_->items);
    encode_batch_.reset();  // abandoned half-done, released before anyone is answered
    for (EncodeItem& item : items) FinishEncode(item.request.get(), status);
  }
  for (EncodeItem& item : encode_queue_) FinishEncode(item.request.get(), status);
  encode_queue_.clear();
  for (auto& r : running_) FinishGenerate(r.get(), status);
  running_.clear();
  for (auto& r : waiting_) FinishGenerate(r.get(), status);
  waiting_.clear();
}

void Scheduler::UpdateGauges() {
  int64_t queued_tokens = 0;
  int encode_requests = 0;
  const EncodeRequest* last = nullptr;
  for (const EncodeItem& item : encode_queue_) {
    queued_tokens += item.request->lengths[item.index];
    if (item.request.get() != last && !item.request->started) ++encode_requests;
    last = item.request.get();
  }
  int generate_requests = 0;
  for (const auto& r : waiting_) {
    queued_tokens += r->prompt_len_now;
    generate_requests += r->started ? 0 : 1;
  }
  metrics_->queued_requests(WorkKind::kEncode).Set(encode_requests);
  metrics_->queued_requests(WorkKind::kGenerate).Set(generate_requests);
  metrics_->scratch_bytes(ScratchPart::kKernelPanels).Set(static_cast<double>(PackedGemmPanelScratchBytes()));
  metrics_->running_sequences().Set(static_cast<double>(running_.size()));
  double kv_ratio = 0;
  if (generate_ != nullptr) {
    const KvStats kv = generate_->kv_stats();
    metrics_->kv_blocks_used().Set(static_cast<double>(kv.blocks_used));
    metrics_->kv_blocks_total().Set(static_cast<double>(kv.blocks_total));
    metrics_->kv_blocks_cached().Set(static_cast<double>(kv.blocks_cached));
    metrics_->kv_used_bytes().Set(static_cast<double>(kv.bytes_used));
    metrics_->kv_capacity_bytes().Set(static_cast<double>(kv.bytes_capacity));
    metrics_->json_mask_bytes().Set(static_cast<double>(generate_->json_mask_bytes()));
    metrics_->scratch_bytes(ScratchPart::kDecodeStep).Set(static_cast<double>(generate_->scratch_bytes()));
    if (kv.bytes_capacity > 0) kv_ratio = static_cast<double>(kv.bytes_used) / static_cast<double>(kv.bytes_capacity);
  }
  const double queue_ratio = static_cast<double>(queued_tokens) / std::max(1, options_.max_step_tokens);
  metrics_->saturation().Set(std::max(kv_ratio, queue_ratio));
}

}  // namespace attnserve
