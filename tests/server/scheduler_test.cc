// The scheduler against fake backends: batching, admission, preemption,
// cancellation, deadlines, drain and shutdown, without threads in the fakes
// or a model.
#include "server/scheduler/scheduler.h"

#include <omp.h>

#include <atomic>
#include <functional>
#include <map>
#include <numeric>

#include "absl/cleanup/cleanup.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "absl/time/clock.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace attnserve {
namespace {

using ::testing::HasSubstr;

// Tokens = characters (text) or ids; the "embedding" is [length, sum of ids].
// A batch is a job of `slices` slices; the results come from Finish.
class FakeEncodeBackend : public EncodeBackend {
 public:
  absl::StatusOr<int> CountTokens(const EncoderInput& input, const EncodeOptions&) const override {
    if (input.is_text && input.text == "bad") return absl::InvalidArgumentError("bad text");
    return input.is_text ? static_cast<int>(input.text.size()) : static_cast<int>(input.token_ids.size());
  }
  absl::StatusOr<std::unique_ptr<EncodeBatchJob>> StartBatch(absl::Span<const EncoderInput> inputs,
                                                             const EncodeOptions&) override {
    batch_sizes.push_back(static_cast<int>(inputs.size()));
    int longest = 0;
    for (const EncoderInput& in : inputs) longest = std::max(longest, *CountTokens(in, EncodeOptions{}));
    auto job = std::make_unique<Job>();
    job->backend = this;
    job->inputs.assign(inputs.begin(), inputs.end());
    job->padded = static_cast<int>(inputs.size()) * longest;
    return job;
  }
  int64_t ScratchBytes(int batch_size, int seq_len) const override { return int64_t{batch_size} * seq_len * 4; }

  // Engine thread only; read after WaitIdle (or from the callbacks).
  std::vector<int> batch_sizes;
  int slices = 1;                                    // per batch
  std::function<void(int padded_tokens)> on_slice;   // e.g. advances a fake clock
  bool fail_next = false;                            // the next batch fails in its first slice
  int slices_run = 0;
  int jobs_finished = 0;
  int jobs_destroyed_unfinished = 0;

 private:
  struct Job : EncodeBatchJob {
    FakeEncodeBackend* backend = nullptr;
    std::vector<EncoderInput> inputs;
    int padded = 0;
    int done = 0;
    bool finished = false;
    ~Job() override {
      if (!finished) ++backend->jobs_destroyed_unfinished;
    }
    int slices_total() const override { return backend->slices; }
    int slices_done() const override { return done; }
    absl::Status RunSlice() override {
      ++backend->slices_run;
      if (backend->on_slice) backend->on_slice(padded);
      if (backend->fail_next) {
        backend->fail_next = false;
        return absl::InternalError("engine failure");
      }
      ++done;
      return absl::OkStatus();
    }
    absl::StatusOr<std::vector<EncodeResult>> Finish() override {
      EXPECT_EQ(done, backend->slices) << "Finish before every slice ran";
      finished = true;
      ++backend->jobs_finished;
      std::vector<EncodeResult> out;
      for (const EncoderInput& in : inputs) {
        EncodeResult r;
        r.embedding = Tensor::Zeros({2});
        r.embedding.f32()[0] = static_cast<float>(in.is_text ? in.text.size() : in.token_ids.size());
        r.embedding.f32()[1] =
            in.is_text ? 0.0f : static_cast<float>(std::accumulate(in.token_ids.begin(), in.token_ids.end(), 0));
        out.push_back(std::move(r));
      }
      return out;
    }
  };
};

// A KV pool of `blocks` blocks of 4 positions. The next token is a function
// of the whole sequence so far (sum % 97 + 3), so recomputation after a
// preemption continues exactly where it left off, as greedy decoding does.
class FakeGenerateBackend : public GenerateBackend {
 public:
  explicit FakeGenerateBackend(int blocks) : blocks_total_(blocks) {}

  absl::StatusOr<SeqId> AddSequence(std::vector<int32_t> prompt, GenerationParams params) override {
    Seq s;
    s.tokens = std::move(prompt);
    s.prompt_len = static_cast<int>(s.tokens.size());
    s.params = params;
    added.push_back({s.prompt_len, params.resumed_tokens});
    seqs_[next_] = s;
    return next_++;
  }
  absl::StatusOr<std::vector<StepEvent>> Step(absl::Span<const StepItem> items) override {
    if (step_sleep > absl::ZeroDuration()) absl::SleepFor(step_sleep);
    if (on_step) on_step();
    if (max_steps > 0 && ++steps_ > max_steps) return absl::InternalError("more steps than max_steps");
    // All-or-nothing block reservation.
    int need = 0;
    for (const StepItem& item : items) {
      const Seq& s = seqs_.at(item.seq);
      const int feed = s.fed < s.prompt_len ? std::min(item.max_prompt_tokens, s.prompt_len - s.fed) : 1;
      need += BlocksFor(s.fed + feed) - s.blocks;
    }
    if (need > blocks_total_ - used_) return absl::ResourceExhaustedError("out of KV blocks");
    std::vector<StepEvent> events;
    for (const StepItem& item : items) {
      Seq& s = seqs_.at(item.seq);
      StepEvent ev;
      ev.seq = item.seq;
      if (s.fed < s.prompt_len) {
        const int feed = std::min(item.max_prompt_tokens, s.prompt_len - s.fed);
        s.fed += feed;
        ev.prompt_tokens_fed = feed;
      } else {
        s.fed += 1;  // the last sampled token
      }
      const int now_blocks = BlocksFor(s.fed);
      used_ += now_blocks - s.blocks;
      s.blocks = now_blocks;
      s.peak = std::max<int64_t>(s.peak, int64_t{s.blocks} * 4 * kBytesPerToken);
      if (s.fed >= s.prompt_len) {
        const int32_t next = std::accumulate(s.tokens.begin(), s.tokens.end(), 0) % 97 + 3;
        s.tokens.push_back(next);
        ++s.generated;
        ev.token_ids.assign(1, next);  // not = {next}: GCC 14 -O2 with ASan misreports that as out of bounds
        ev.text = "t" + std::to_string(next) + " ";
        if (s.generated >= s.params.max_new_tokens) {
          ev.finished = true;
          ev.finish_reason = FinishReason::kLength;
        }
      }
      events.push_back(ev);
    }
    if (on_step_cost) {
      int prompt_tokens = 0, decode_tokens = 0;
      for (const StepEvent& ev : events) (ev.prompt_tokens_fed > 0 ? prompt_tokens : decode_tokens) += std::max(1, ev.prompt_tokens_fed);
      on_step_cost(prompt_tokens, decode_tokens);
    }
    return events;
  }
  void Release(SeqId seq) override {
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return;
    used_ -= it->second.blocks;
    seqs_.erase(it);
  }
  int CachedPromptTokens(SeqId) const override { return 0; }
  KvSequenceStats SequenceKv(SeqId seq) const override {
    KvSequenceStats st;
    auto it = seqs_.find(seq);
    if (it == seqs_.end()) return st;
    st.num_blocks = it->second.blocks;
    st.bytes = int64_t{it->second.blocks} * 4 * kBytesPerToken;
    st.peak_bytes = it->second.peak;
    return st;
  }
  KvStats kv_stats() const override {
    KvStats st;
    st.blocks_total = blocks_total_;
    st.blocks_used = used_;
    st.bytes_per_token = kBytesPerToken;
    st.bytes_capacity = int64_t{blocks_total_} * 4 * kBytesPerToken;
    st.bytes_used = int64_t{used_} * 4 * kBytesPerToken;
    st.num_sequences = static_cast<int>(seqs_.size());
    return st;
  }
  int block_size() const override { return 4; }

  static constexpr int64_t kBytesPerToken = 100;
  // (prompt length, resumed_tokens) of every AddSequence, in order
  // (written on the scheduler thread; read once it is idle).
  std::vector<std::pair<int, int>> added;
  // Steps after which every step fails (INTERNAL): ends a scheduler that
  // would otherwise spin for ever. 0: no limit.
  int max_steps = 0;
  absl::Duration step_sleep;  // stands in for the engine's compute time
  std::function<void()> on_step;  // e.g. advances a fake clock
  // After a successful step: its prompt tokens and decoded tokens (e.g. a
  // fake clock charging a cost per prompt token).
  std::function<void(int prompt_tokens, int decode_tokens)> on_step_cost;

 private:
  struct Seq {
    std::vector<int32_t> tokens;
    int prompt_len = 0;
    int fed = 0;
    int blocks = 0;
    int generated = 0;
    int64_t peak = 0;
    GenerationParams params;
  };
  static int BlocksFor(int positions) { return (positions + 3) / 4; }
  int steps_ = 0;

  int blocks_total_;
  int used_ = 0;
  std::map<SeqId, Seq> seqs_;
  SeqId next_ = 1;
};

// What one Generate produced.
struct GenerateOutcome {
  absl::Notification done;
  absl::Status status;
  std::vector<int32_t> tokens;
  GenerateSummary summary;
  int admissions = 0;             // on_admitted calls
  bool admitted_before_tokens = true;
};

GenerateTask MakeGenerate(std::vector<int32_t> prompt, int max_new, GenerateOutcome* out,
                          std::shared_ptr<RequestControl> control = std::make_shared<RequestControl>()) {
  GenerateTask task;
  task.prompt = std::move(prompt);
  task.params.max_new_tokens = max_new;
  task.control = std::move(control);
  task.on_event = [out](const StepEvent& ev) {
    if (out->admissions == 0) out->admitted_before_tokens = false;
    out->tokens.insert(out->tokens.end(), ev.token_ids.begin(), ev.token_ids.end());
  };
  task.on_admitted = [out](int) { ++out->admissions; };
  task.on_done = [out](const absl::Status& s, const GenerateSummary& summary) {
    out->status = s;
    out->summary = summary;
    out->done.Notify();
  };
  return task;
}

// How one Encode ended.
struct EncodeOutcome {
  absl::Notification done;
  absl::Status status;
};

EncodeTask MakeEncode(std::vector<EncoderInput> inputs, std::shared_ptr<RequestControl> control,
                      EncodeOutcome* out) {
  EncodeTask task;
  task.inputs = std::move(inputs);
  task.control = std::move(control);
  task.done = [out](absl::StatusOr<std::vector<EncodeResult>> results, const v1::EncodeUsage&) {
    out->status = results.status();
    out->done.Notify();
  };
  return task;
}

// The tokens the fake produces for `prompt` run alone with plenty of KV.
std::vector<int32_t> Expected(std::vector<int32_t> prompt, int max_new) {
  std::vector<int32_t> out;
  for (int i = 0; i < max_new; ++i) {
    const int32_t next = std::accumulate(prompt.begin(), prompt.end(), 0) % 97 + 3;
    prompt.push_back(next);
    out.push_back(next);
  }
  return out;
}

class SchedulerTest : public ::testing::Test {
 protected:
  ServerMetrics metrics_{BuildLabels{"test", "3.7", "avx2", 1}};
};

TEST_F(SchedulerTest, EncodeBatchesConcurrentRequestsAndKeepsOrder) {
  FakeEncodeBackend encode;
  SchedulerOptions options;
  options.encode_max_wait = absl::Milliseconds(200);  // long enough that all three arrive first
  options.encode_max_batch_size = 8;
  Scheduler scheduler(options, &encode, nullptr, &metrics_);
  std::vector<std::vector<float>> firsts(3);
  absl::Notification done[3];
  for (int r = 0; r < 3; ++r) {
    EncodeTask task;
    for (int i = 0; i < 2; ++i) task.inputs.push_back({true, std::string(r * 2 + i + 1, 'x'), {}});
    task.control = std::make_shared<RequestControl>();
    task.done = [&, r](absl::StatusOr<std::vector<EncodeResult>> results, const v1::EncodeUsage& usage) {
      ASSERT_TRUE(results.ok()) << results.status();
      for (const EncodeResult& e : *results) firsts[r].push_back(e.embedding.f32()[0]);
      EXPECT_EQ(usage.prompt_tokens(), (r * 2 + 1) + (r * 2 + 2));
      done[r].Notify();
    };
    ASSERT_TRUE(scheduler.SubmitEncode(std::move(task)).ok());
  }
  for (auto& d : done) d.WaitForNotification();
  for (int r = 0; r < 3; ++r) EXPECT_THAT(firsts[r], ::testing::ElementsAre(r * 2 + 1, r * 2 + 2));
  ASSERT_TRUE(scheduler.WaitIdle(absl::Now() + absl::Seconds(10)));
  // Six inputs from three requests ran together in one batch.
  EXPECT_THAT(encode.batch_sizes, ::testing::ElementsAre(6));
}

TEST_F(SchedulerTest, EncodeSplitsOversizeRequestAcrossBatchesAndReassembles) {
  FakeEncodeBackend encode;
  encode.slices = 3;
  SchedulerOptions options;
  options.encode_max_batch_size = 4;
  Scheduler scheduler(options, &encode, nullptr, &metrics_);
  EncodeTask task;
  for (int i = 0; i < 10; ++i) task.inputs.push_back({false, "", std::vector<int32_t>(i + 1, 1)});
  task.control = std::make_shared<RequestControl>();
  absl::Notification done;
  std::vector<float> lengths;
  task.done = [&](absl::StatusOr<std::vector<EncodeResult>> results, const v1::EncodeUsage&) {
    ASSERT_TRUE(results.ok());
    for (const EncodeResult& e : *results) lengths.push_back(e.embedding.f32()[0]);
    done.Notify();
  };
  ASSERT_TRUE(scheduler.SubmitEncode(std::move(task)).ok());
  done.WaitForNotification();
  EXPECT_THAT(lengths, ::testing::ElementsAre(1, 2, 3, 4, 5, 6, 7, 8, 9, 10));
  ASSERT_TRUE(scheduler.WaitIdle(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(std::accumulate(encode.batch_sizes.begin(), encode.batch_sizes.end(), 0), 10);
  for (int b : encode.batch_sizes) EXPECT_LE(b, 4);
}

TEST_F(SchedulerTest, BadEncodeInputIsRefusedAloneNamingTheInput) {
  FakeEncodeBackend encode;
  Scheduler scheduler(SchedulerOptions{}, &encode, nullptr, &metrics_);
  EncodeTask task;
  task.inputs = {{true, "fine", {}}, {true, "bad", {}}};
  task.done = [](absl::StatusOr<std::vector<EncodeResult>>, const v1::EncodeUsage&) { FAIL() << "must not run"; };
  const absl::Status s = scheduler.SubmitEncode(std::move(task));
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(s.message(), HasSubstr("inputs[1]"));
  EncodeTask empty;
  EXPECT_EQ(scheduler.SubmitEncode(std::move(empty)).code(), absl::StatusCode::kInvalidArgument);
}

TEST_F(SchedulerTest, FailedEncodeBatchFailsEveryRequestInItExplicitly) {
  FakeEncodeBackend encode;
  encode.fail_next = true;
  SchedulerOptions options;
  options.encode_max_wait = absl::Milliseconds(200);
  Scheduler scheduler(options, &encode, nullptr, &metrics_);
  absl::Notification done[2];
  absl::Status statuses[2];
  for (int r = 0; r < 2; ++r) {
    EncodeTask task;
    task.inputs = {{true, "abc", {}}};
    task.done = [&, r](absl::StatusOr<std::vector<EncodeResult>> results, const v1::EncodeUsage&) {
      statuses[r] = results.status();
      done[r].Notify();
    };
    ASSERT_TRUE(scheduler.SubmitEncode(std::move(task)).ok());
  }
  for (auto& d : done) d.WaitForNotification();
  EXPECT_EQ(statuses[0].code(), absl::StatusCode::kInternal);
  EXPECT_EQ(statuses[1].code(), absl::StatusCode::kInternal);
}

TEST_F(SchedulerTest, QueueFullIsRefusedAtOnce) {
  FakeEncodeBackend encode;
  SchedulerOptions options;
  options.max_queue = 2;
  options.encode_max_wait = absl::Seconds(30);  // nothing runs while we fill the queue
  options.encode_max_batch_size = 100;
  Scheduler scheduler(options, &encode, nullptr, &metrics_);
  int completed = 0;
  absl::Mutex mu;
  for (int i = 0; i < 3; ++i) {
    EncodeTask task;
    task.inputs = {{true, "abc", {}}};
    task.done = [&](absl::StatusOr<std::vector<EncodeResult>>, const v1::EncodeUsage&) {
      absl::MutexLock l(&mu);
      ++completed;
    };
    const absl::Status s = scheduler.SubmitEncode(std::move(task));
    if (i < 2) {
      EXPECT_TRUE(s.ok()) << s;
    } else {
      EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
      EXPECT_THAT(s.message(), HasSubstr("--max-queue=2"));
    }
  }
  scheduler.BeginDrain();  // draining runs queued encode inputs without waiting
  ASSERT_TRUE(scheduler.WaitIdle(absl::Now() + absl::Seconds(10)));
  absl::MutexLock l(&mu);
  EXPECT_EQ(completed, 2);
}

TEST_F(SchedulerTest, ConcurrentGeneratesEqualThoseRunAlone) {
  FakeGenerateBackend generate(/*blocks=*/1000);
  Scheduler scheduler(SchedulerOptions{}, nullptr, &generate, &metrics_);
  std::vector<std::unique_ptr<GenerateOutcome>> outs;
  for (int r = 0; r < 8; ++r) {
    outs.push_back(std::make_unique<GenerateOutcome>());
    std::vector<int32_t> prompt(5 + r * 3, r + 1);
    ASSERT_TRUE(scheduler.SubmitGenerate(MakeGenerate(prompt, 10 + r, outs.back().get())).ok());
  }
  for (int r = 0; r < 8; ++r) {
    outs[r]->done.WaitForNotification();
    ASSERT_TRUE(outs[r]->status.ok()) << outs[r]->status;
    EXPECT_EQ(outs[r]->tokens, Expected(std::vector<int32_t>(5 + r * 3, r + 1), 10 + r));
    EXPECT_EQ(outs[r]->summary.generated_tokens, 10 + r);
    EXPECT_EQ(outs[r]->summary.finish_reason, FinishReason::kLength);
    EXPECT_GT(outs[r]->summary.peak_kv_bytes, 0);
  }
  ASSERT_TRUE(scheduler.WaitIdle(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(generate.kv_stats().blocks_used, 0);
}

TEST_F(SchedulerTest, EndOfPassFollowsEveryStepsEventsBeforeTheNextStep) {
  // The gRPC door stages each token's message in on_event and hands them on
  // in end_of_pass: a step's events must never wait past the next step.
  FakeGenerateBackend generate(/*blocks=*/1000);
  absl::Mutex mu;
  int staged = 0;          // events since the last end_of_pass
  int flushes_with_events = 0;
  int steps_with_events_pending = 0;
  generate.on_step = [&] {
    absl::MutexLock lock(&mu);
    if (staged > 0) ++steps_with_events_pending;
  };
  SchedulerOptions options;
  options.end_of_pass = [&] {
    absl::MutexLock lock(&mu);
    if (staged > 0) ++flushes_with_events;
    staged = 0;
  };
  std::vector<std::unique_ptr<GenerateOutcome>> outs;
  {
    Scheduler scheduler(options, nullptr, &generate, &metrics_);
    for (int r = 0; r < 4; ++r) {
      outs.push_back(std::make_unique<GenerateOutcome>());
      GenerateTask task = MakeGenerate(std::vector<int32_t>(3 + r, r + 1), 6 + r, outs.back().get());
      task.on_event = [&, out = outs.back().get()](const StepEvent& ev) {
        out->tokens.insert(out->tokens.end(), ev.token_ids.begin(), ev.token_ids.end());
        absl::MutexLock lock(&mu);
        ++staged;
      };
      ASSERT_TRUE(scheduler.SubmitGenerate(std::move(task)).ok());
    }
    for (auto& out : outs) out->done.WaitForNotification();
  }  // joins the scheduler thread: its last pass has ended
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(outs[r]->tokens, Expected(std::vector<int32_t>(3 + r, r + 1), 6 + r));
  }
  absl::MutexLock lock(&mu);
  EXPECT_EQ(steps_with_events_pending, 0);
  EXPECT_EQ(staged, 0);  // the last step's events were flushed too
  EXPECT_GE(flushes_with_events, 9);  // at least one pass per token of the longest request
}

TEST_F(SchedulerTest, RequestThatCanNeverFitIsRefusedNamingBytes) {
  FakeGenerateBackend generate(/*blocks=*/4);  // 16 positions, 1600 bytes
  Scheduler scheduler(SchedulerOptions{}, nullptr, &generate, &metrics_);
  GenerateOutcome out;
  const absl::Status s = scheduler.SubmitGenerate(MakeGenerate(std::vector<int32_t>(10, 1), 10, &out));
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_THAT(s.message(), HasSubstr("2000 bytes"));  // 20 tokens = 5 blocks of 4 x 100 bytes
  EXPECT_THAT(s.message(), HasSubstr("1600 bytes"));
  GenerateOutcome fits;
  ASSERT_TRUE(scheduler.SubmitGenerate(MakeGenerate(std::vector<int32_t>(8, 1), 8, &fits)).ok());
  fits.done.WaitForNotification();
  EXPECT_TRUE(fits.status.ok());
}

TEST_F(SchedulerTest, PreemptsWhenBlocksRunOutAndStillProducesExactTokens) {
  // Each request needs up to 4 blocks; 6 blocks cannot hold three at once.
  FakeGenerateBackend generate(/*blocks=*/6);
  // No step runs before all three are in: on a loaded machine the first
  // could otherwise finish alone before the others arrive, and nothing would
  // need preempting.
  absl::Notification all_submitted;
  generate.on_step = [&] { all_submitted.WaitForNotification(); };
  SchedulerOptions options;
  options.max_step_tokens = 64;
  Scheduler scheduler(options, nullptr, &generate, &metrics_);
  // Released before the scheduler joins its thread, also on a failed ASSERT.
  absl::Cleanup release = [&] {
    if (!all_submitted.HasBeenNotified()) all_submitted.Notify();
  };
  std::vector<std::unique_ptr<GenerateOutcome>> outs;
  for (int r = 0; r < 3; ++r) {
    outs.push_back(std::make_unique<GenerateOutcome>());
    ASSERT_TRUE(scheduler.SubmitGenerate(MakeGenerate(std::vector<int32_t>(4, r + 2), 12, outs.back().get())).ok());
  }
  all_submitted.Notify();
  int preemptions = 0;
  for (int r = 0; r < 3; ++r) {
    outs[r]->done.WaitForNotification();
    ASSERT_TRUE(outs[r]->status.ok()) << outs[r]->status;
    EXPECT_EQ(outs[r]->tokens, Expected(std::vector<int32_t>(4, r + 2), 12)) << "request " << r;
    preemptions += outs[r]->summary.preemptions;
    // Admitted once, before its first event, however often it comes back.
    EXPECT_EQ(outs[r]->admissions, 1) << "request " << r;
    EXPECT_TRUE(outs[r]->admitted_before_tokens) << "request " << r;
  }
  EXPECT_GT(preemptions, 0);
  ASSERT_TRUE(scheduler.WaitIdle(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(generate.kv_stats().blocks_used, 0);
  // A preempted request comes back with its output after its 4-token prompt,
  // and says so, so the engine resumes its RNG and text there.
  int resumed = 0;
  for (const auto& [prompt_len, resumed_tokens] : generate.added) {
    EXPECT_EQ(resumed_tokens, prompt_len - 4);
    resumed += prompt_len > 4;
  }
  EXPECT_GT(resumed, 0);
  EXPECT_LE(resumed, preemptions);  // one preempted before its first token comes back with none
}

TEST_F(SchedulerTest, PreemptionUnderKvPressureAlwaysMakesProgress) {
  // Many requests on a small pool with chunked prefill beside decoding
  // streams: sequences are admitted while others are part-way through their
  // prompts, and preempted ones come back with long recomputed prompts.
  // Admission used to count only the blocks already held, so it let in a
  // sequence on blocks another one's prompt still needed; every step then
  // failed, preempting the newest freed nothing, and it was admitted again:
  // the loop spun for ever. Each case must finish, with exact tokens, long
  // before the fake engine's step limit. A fake clock fixes the step costs,
  // so the prefill cap (4 tokens beside decoding, or min_prefill_chunk) and
  // with it the schedule do not depend on this machine's speed.
  for (int total : {12, 16, 24}) {
    for (int requests : {6, 8, 12}) {
      for (int max_new : {12, 24, 40}) {
        for (int min_chunk : {4, 8, 16}) {
          SCOPED_TRACE(absl::StrCat(total, " blocks, ", requests, " requests of ", max_new,
                                    " tokens, min_prefill_chunk ", min_chunk));
          FakeGenerateBackend generate(total);
          generate.max_steps = 20000;
          std::atomic<int64_t> now_ns{0};
          absl::Notification all_submitted;
          generate.on_step = [&] { all_submitted.WaitForNotification(); };
          generate.on_step_cost = [&](int prompt_tokens, int) { now_ns += 1'000'000 + prompt_tokens * 250'000; };
          SchedulerOptions options;
          options.clock = [&] { return absl::FromUnixNanos(now_ns.load()); };
          options.min_prefill_chunk = min_chunk;
          Scheduler scheduler(options, nullptr, &generate, &metrics_);
          std::vector<std::vector<int32_t>> prompts;
          std::vector<std::unique_ptr<GenerateOutcome>> outs;
          for (int r = 0; r < requests; ++r) {
            std::vector<int32_t> prompt(1 + (r * 13) % 40, r + 1);  // 1 to 40 tokens
            if (static_cast<int>(prompt.size()) + max_new > total * 4) continue;  // could never fit
            prompts.push_back(prompt);
            outs.push_back(std::make_unique<GenerateOutcome>());
            ASSERT_TRUE(scheduler.SubmitGenerate(MakeGenerate(prompt, max_new, outs.back().get())).ok());
          }
          all_submitted.Notify();
          for (size_t r = 0; r < outs.size(); ++r) {
            outs[r]->done.WaitForNotification();
            ASSERT_TRUE(outs[r]->status.ok()) << "request " << r << ": " << outs[r]->status;
            EXPECT_EQ(outs[r]->tokens, Expected(prompts[r], max_new)) << "request " << r;
          }
        }
      }
    }
  }
}

TEST_F(SchedulerTest, CancelFreesBlocksAndEndsWithCancelled) {
  FakeGenerateBackend generate(/*blocks=*/1000);
  Scheduler scheduler(SchedulerOptions{}, nullptr, &generate, &metrics_);
  auto control = std::make_shared<RequestControl>();
  GenerateOutcome out;
  GenerateTask task = MakeGenerate(std::vector<int32_t>(4, 1), 3000, &out, control);
  absl::Notification first;
  task.on_event = [&](const StepEvent&) {
    if (!first.HasBeenNotified()) first.Notify();
    // Hold the engine thread until the test has cancelled (a test-only block).
    while (!control->cancelled.load()) absl::SleepFor(absl::Milliseconds(1));
  };
  ASSERT_TRUE(scheduler.SubmitGenerate(std::move(task)).ok());
  first.WaitForNotification();
  control->cancelled.store(true);
  out.done.WaitForNotification();
  EXPECT_EQ(out.status.code(), absl::StatusCode::kCancelled);
  ASSERT_TRUE(scheduler.WaitIdle(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(generate.kv_stats().blocks_used, 0);
}

TEST_F(SchedulerTest, DeadlineEndsWithDeadlineExceededAndFreesBlocks) {
  FakeGenerateBackend generate(/*blocks=*/1000);
  Scheduler scheduler(SchedulerOptions{}, nullptr, &generate, &metrics_);
  auto control = std::make_shared<RequestControl>();
  control->deadline = absl::Now() + absl::Milliseconds(50);
  GenerateOutcome out;
  GenerateTask task = MakeGenerate(std::vector<int32_t>(4, 1), 3000, &out, control);
  task.on_event = [](const StepEvent&) { absl::SleepFor(absl::Milliseconds(1)); };  // ~3 s of tokens
  ASSERT_TRUE(scheduler.SubmitGenerate(std::move(task)).ok());
  out.done.WaitForNotification();
  EXPECT_EQ(out.status.code(), absl::StatusCode::kDeadlineExceeded);
  ASSERT_TRUE(scheduler.WaitIdle(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(generate.kv_stats().blocks_used, 0);
}

TEST_F(SchedulerTest, DrainRefusesNewWorkAndShutdownEndsTheRestUnavailable) {
  FakeGenerateBackend generate(/*blocks=*/1000);
  Scheduler scheduler(SchedulerOptions{}, nullptr, &generate, &metrics_);
  GenerateOutcome endless;
  GenerateTask task = MakeGenerate(std::vector<int32_t>(4, 1), 3000, &endless);
  task.on_event = [](const StepEvent&) { absl::SleepFor(absl::Milliseconds(1)); };  // ~3 s of tokens
  ASSERT_TRUE(scheduler.SubmitGenerate(std::move(task)).ok());
  scheduler.BeginDrain();
  GenerateOutcome late;
  EXPECT_EQ(scheduler.SubmitGenerate(MakeGenerate(std::vector<int32_t>(4, 1), 2, &late)).code(),
            absl::StatusCode::kUnavailable);
  EXPECT_FALSE(scheduler.WaitIdle(absl::Now() + absl::Milliseconds(50)));
  scheduler.Shutdown();
  endless.done.WaitForNotification();
  EXPECT_EQ(endless.status.code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(generate.kv_stats().blocks_used, 0);
}

}  // namespace
}  // namespace attnserve

namespace attnserve {
namespace {

// The overhead histogram counts what the loop does around the engine (here a
// callback that sleeps on the engine thread) and not the engine call itself.
TEST_F(SchedulerTest, OverheadMetricCountsBookkeepingButNotEngineTime) {
  FakeGenerateBackend generate(/*blocks=*/1000);
  generate.step_sleep = absl::Milliseconds(20);
  Scheduler scheduler(SchedulerOptions{}, nullptr, &generate, &metrics_);
  const prometheus::ClientMetric before = metrics_.scheduler_overhead().Collect();
  EXPECT_EQ(before.histogram.sample_count, 0u);
  GenerateOutcome out;
  GenerateTask task = MakeGenerate({1, 2, 3}, /*max_new=*/6, &out);
  auto record = task.on_event;
  task.on_event = [record](const StepEvent& ev) {
    record(ev);
    absl::SleepFor(absl::Milliseconds(2));  // slow bookkeeping on the engine thread
  };
  ASSERT_TRUE(scheduler.SubmitGenerate(std::move(task)).ok());
  out.done.WaitForNotification();
  ASSERT_TRUE(out.status.ok()) << out.status;
  ASSERT_TRUE(scheduler.WaitIdle(absl::Now() + absl::Seconds(10)));
  // The last pass records its overhead after it has finished the request
  // (which is what WaitIdle waits for), so wait for that observation too
  // (a race seen under ASan: 5 of 6 counted).
  const absl::Time deadline = absl::Now() + absl::Seconds(10);
  while (metrics_.scheduler_overhead().Collect().histogram.sample_count < 6 && absl::Now() < deadline) {
    absl::SleepFor(absl::Milliseconds(1));
  }

  const prometheus::ClientMetric overhead = metrics_.scheduler_overhead().Collect();
  const prometheus::ClientMetric ratio = metrics_.scheduler_overhead_ratio().Collect();
  // One observation per pass that ran a step: at least the 6 decode steps.
  ASSERT_GE(overhead.histogram.sample_count, 6u);
  EXPECT_EQ(ratio.histogram.sample_count, overhead.histogram.sample_count);
  // Each of the 6 token callbacks slept 2 ms inside a pass.
  EXPECT_GE(overhead.histogram.sample_sum, 6 * 0.002);
  // The 20 ms engine sleeps are excluded: on average far less than a step.
  EXPECT_LT(overhead.histogram.sample_sum / overhead.histogram.sample_count, 0.020);
  const double mean_ratio = ratio.histogram.sample_sum / ratio.histogram.sample_count;
  EXPECT_GT(mean_ratio, 0.0);
  EXPECT_LT(mean_ratio, 0.5);
}

}  // namespace
}  // namespace attnserve

namespace attnserve {
namespace {

// Interleaving: while a stream decodes, each encode batch is cut so that its
// longest slice fits in one generate step by the measured costs. On a fake
// clock a generate step costs 10 ms and an encode batch (one slice here) 1 ms
// per padded token, so once both costs are known a batch beside decoding holds
// 10 padded tokens: two 5-token inputs.
TEST_F(SchedulerTest, EncodeBesideGenerateIsCutToOneStepOfTime) {
  std::atomic<int64_t> now_ns{absl::ToUnixNanos(absl::Now())};
  FakeEncodeBackend encode;
  encode.on_slice = [&](int padded) { now_ns += int64_t{padded} * 1'000'000; };
  FakeGenerateBackend generate(/*blocks=*/1000);
  // The fake steps take no real time, so the stream could finish its 400
  // steps before this thread even submits the encode (seen under a loaded
  // ctest run). Its second step waits for the submission.
  absl::Notification encode_submitted;
  int steps = 0;  // engine thread only
  generate.on_step = [&] {
    now_ns += 10'000'000;
    if (++steps == 2) encode_submitted.WaitForNotification();
  };
  SchedulerOptions options;
  options.clock = [&] { return absl::FromUnixNanos(now_ns.load()); };
  options.encode_max_wait = absl::ZeroDuration();
  Scheduler scheduler(options, &encode, &generate, &metrics_);

  GenerateOutcome gen;
  absl::Notification decoding;
  GenerateTask task = MakeGenerate({1, 2, 3}, /*max_new=*/400, &gen);
  auto record = task.on_event;
  task.on_event = [record, &decoding](const StepEvent& ev) {
    record(ev);
    if (!decoding.HasBeenNotified()) decoding.Notify();
  };
  ASSERT_TRUE(scheduler.SubmitGenerate(std::move(task)).ok());
  decoding.WaitForNotification();

  EncodeTask enc;
  EncoderInput five;
  five.text = "abcde";
  enc.inputs.assign(40, five);
  enc.control = std::make_shared<RequestControl>();
  absl::Notification encoded;
  absl::Status enc_status;
  int results = 0;
  bool stream_done_when_encoded = false;
  enc.done = [&](absl::StatusOr<std::vector<EncodeResult>> r, const v1::EncodeUsage&) {
    enc_status = r.status();
    if (r.ok()) results = static_cast<int>(r->size());
    // Read here, not after the wait below: the fake stream keeps stepping.
    stream_done_when_encoded = gen.done.HasBeenNotified();
    encoded.Notify();
  };
  ASSERT_TRUE(scheduler.SubmitEncode(std::move(enc)).ok());
  encode_submitted.Notify();
  encoded.WaitForNotification();
  ASSERT_TRUE(enc_status.ok()) << enc_status;
  EXPECT_EQ(results, 40);
  EXPECT_FALSE(stream_done_when_encoded) << "the stream should still be decoding";
  gen.done.WaitForNotification();
  ASSERT_TRUE(scheduler.WaitIdle(absl::Now() + absl::Seconds(10)));

  // The first batch, before any encode cost was known, used the static cap
  // (max_step_tokens padded tokens: the 32-input batch limit); every later one
  // fits one 10 ms step.
  ASSERT_GE(encode.batch_sizes.size(), 2u);
  EXPECT_EQ(encode.batch_sizes.front(), 32);
  for (size_t i = 1; i < encode.batch_sizes.size(); ++i) EXPECT_EQ(encode.batch_sizes[i], 2) << "batch " << i;
}

}  // namespace
}  // namespace attnserve

namespace attnserve {
namespace {

// An Encode's usage: its batches' engine time counted once per batch, however
// many of its inputs a batch holds, and the rest of its time as queueing. On a
// fake clock each slice takes 1 ms per padded token; the request's 3 inputs of
// 4 tokens share one batch (12 ms), and it waits 5 ms before that batch.
TEST_F(SchedulerTest, EncodeUsageCountsEachBatchOnceAndTheRestAsQueueTime) {
  std::atomic<int64_t> now_ns{absl::ToUnixNanos(absl::Now())};
  FakeEncodeBackend encode;
  encode.on_slice = [&](int padded) { now_ns += int64_t{padded} * 1'000'000; };
  SchedulerOptions options;
  options.clock = [&] { return absl::FromUnixNanos(now_ns.load()); };
  options.encode_max_wait = absl::Milliseconds(5);
  Scheduler scheduler(options, &encode, nullptr, &metrics_);
  EncodeTask enc;
  EncoderInput four;
  four.text = "abcd";
  enc.inputs.assign(3, four);
  enc.control = std::make_shared<RequestControl>();
  absl::Notification done;
  v1::EncodeUsage usage;
  enc.done = [&](absl::StatusOr<std::vector<EncodeResult>> r, const v1::EncodeUsage& u) {
    EXPECT_TRUE(r.ok()) << r.status();
    usage = u;
    done.Notify();
  };
  ASSERT_TRUE(scheduler.SubmitEncode(std::move(enc)).ok());
  // Nothing runs before the batch's wait ends on the fake clock.
  now_ns += 5'000'000;
  done.WaitForNotification();
  EXPECT_EQ(encode.batch_sizes, std::vector<int>({3}));
  EXPECT_EQ(usage.prompt_tokens(), 12);
  EXPECT_EQ(usage.padded_tokens(), 12);
  EXPECT_EQ(usage.compute_time_us(), 12'000);
  EXPECT_EQ(usage.queue_time_us(), 5'000);
}

// Encode slices between generate steps: a step costs 10 ms on a fake clock and
// an encode slice 3 ms (batches of two 5-token inputs, 0.3 ms per padded
// token, 8 slices each), so a step's budget holds three slices: never more
// between two steps, the budget is used, and the encode still finishes (in
// order) while the stream decodes.
TEST_F(SchedulerTest, EncodeSlicesInterleaveWithGenerateStepsWithinOneStepOfTime) {
  std::atomic<int64_t> now_ns{absl::ToUnixNanos(absl::Now())};
  std::string log;  // engine thread only: 'G' per generate step, 'S' per encode slice
  FakeEncodeBackend encode;
  encode.slices = 8;
  encode.on_slice = [&](int padded) {
    log += 'S';
    now_ns += int64_t{padded} * 300'000;
  };
  FakeGenerateBackend generate(/*blocks=*/1000);
  absl::Notification encode_submitted;
  int steps = 0;
  generate.on_step = [&] {
    log += 'G';
    now_ns += 10'000'000;
    if (++steps == 2) encode_submitted.WaitForNotification();
  };
  SchedulerOptions options;
  options.clock = [&] { return absl::FromUnixNanos(now_ns.load()); };
  options.encode_max_wait = absl::ZeroDuration();
  options.encode_max_batch_size = 2;
  Scheduler scheduler(options, &encode, &generate, &metrics_);

  GenerateOutcome gen;
  ASSERT_TRUE(scheduler.SubmitGenerate(MakeGenerate({1, 2, 3}, /*max_new=*/400, &gen)).ok());
  EncodeTask enc;
  for (int i = 0; i < 40; ++i) enc.inputs.push_back({false, "", std::vector<int32_t>(5, i)});
  enc.control = std::make_shared<RequestControl>();
  absl::Notification encoded;
  std::vector<float> sums;
  bool stream_done_when_encoded = true;
  enc.done = [&](absl::StatusOr<std::vector<EncodeResult>> r, const v1::EncodeUsage&) {
    if (r.ok()) {
      for (const EncodeResult& e : *r) sums.push_back(e.embedding.f32()[1]);
    }
    stream_done_when_encoded = gen.done.HasBeenNotified();
    encoded.Notify();
  };
  ASSERT_TRUE(scheduler.SubmitEncode(std::move(enc)).ok());
  encode_submitted.Notify();
  encoded.WaitForNotification();
  gen.done.WaitForNotification();
  ASSERT_TRUE(scheduler.WaitIdle(absl::Now() + absl::Seconds(10)));

  ASSERT_EQ(sums.size(), 40u);
  for (int i = 0; i < 40; ++i) EXPECT_EQ(sums[i], 5 * i) << "input " << i;
  EXPECT_FALSE(stream_done_when_encoded) << "the stream should still be decoding";
  EXPECT_EQ(encode.slices_run, 20 * 8);
  EXPECT_EQ(encode.jobs_finished, 20);
  // Runs of slices strictly between two generate steps.
  const size_t first = log.find('G'), last = log.rfind('G');
  ASSERT_NE(first, std::string::npos);
  int longest_run = 0, run = 0;
  for (size_t i = first; i <= last; ++i) {
    if (log[i] == 'S') {
      longest_run = std::max(longest_run, ++run);
    } else {
      run = 0;
    }
  }
  EXPECT_EQ(longest_run, 3) << log.substr(first, 200);
}

// Prefill beside a decoding stream: a step costs 10 ms plus 1 ms per prompt
// token on a fake clock. Four 100-token prompts arriving while a stream
// decodes would, in one step, stall it for 410 ms; the prefill cap spreads
// them so that the stream's inter-token gap stays within a decode step plus
// the cap's floor (16 tokens: 26 ms). Every output stays exact. Alone, a
// prompt still takes the whole step budget: 300 tokens in one step.
TEST_F(SchedulerTest, PrefillBesideDecodingStreamsIsCappedToAboutOneDecodeStep) {
  std::atomic<int64_t> now_ns{absl::ToUnixNanos(absl::Now())};
  FakeGenerateBackend generate(/*blocks=*/1000);
  absl::Notification stream_decoding, others_submitted;
  int steps = 0;
  int largest_mixed_prompt_tokens = 0;
  generate.on_step_cost = [&](int prompt_tokens, int decode_tokens) {
    now_ns += 10'000'000 + int64_t{prompt_tokens} * 1'000'000;
    if (decode_tokens > 0) largest_mixed_prompt_tokens = std::max(largest_mixed_prompt_tokens, prompt_tokens);
    if (++steps == 5) {
      stream_decoding.Notify();
      others_submitted.WaitForNotification();
    }
  };
  SchedulerOptions options;
  options.clock = [&] { return absl::FromUnixNanos(now_ns.load()); };
  Scheduler scheduler(options, nullptr, &generate, &metrics_);

  GenerateOutcome stream;
  std::vector<int64_t> token_times;  // fake-clock ns of each of the stream's tokens
  GenerateTask task = MakeGenerate({1, 2, 3}, /*max_new=*/120, &stream);
  auto record = task.on_event;
  task.on_event = [&, record](const StepEvent& ev) {
    token_times.push_back(now_ns.load());
    record(ev);
  };
  ASSERT_TRUE(scheduler.SubmitGenerate(std::move(task)).ok());
  stream_decoding.WaitForNotification();
  std::vector<std::unique_ptr<GenerateOutcome>> others;
  for (int r = 0; r < 4; ++r) {
    others.push_back(std::make_unique<GenerateOutcome>());
    ASSERT_TRUE(
        scheduler.SubmitGenerate(MakeGenerate(std::vector<int32_t>(100, r + 5), 5, others.back().get())).ok());
  }
  others_submitted.Notify();
  stream.done.WaitForNotification();
  for (int r = 0; r < 4; ++r) {
    others[r]->done.WaitForNotification();
    ASSERT_TRUE(others[r]->status.ok()) << others[r]->status;
    EXPECT_EQ(others[r]->tokens, Expected(std::vector<int32_t>(100, r + 5), 5));
  }
  ASSERT_TRUE(stream.status.ok()) << stream.status;
  EXPECT_EQ(stream.tokens, Expected({1, 2, 3}, 120));
  int64_t largest_gap_ns = 0;
  for (size_t i = 1; i < token_times.size(); ++i) {
    largest_gap_ns = std::max(largest_gap_ns, token_times[i] - token_times[i - 1]);
  }
  EXPECT_LE(largest_gap_ns, 26'000'000) << "prompt tokens in the largest mixed step: " << largest_mixed_prompt_tokens;
  EXPECT_GE(largest_mixed_prompt_tokens, options.min_prefill_chunk);  // the floor: prompts progress
  EXPECT_LE(largest_mixed_prompt_tokens, options.min_prefill_chunk);

  // Nothing decoding: the whole budget, one step of 10 + 300 ms.
  ASSERT_TRUE(scheduler.WaitIdle(absl::Now() + absl::Seconds(10)));
  GenerateOutcome alone;
  ASSERT_TRUE(scheduler.SubmitGenerate(MakeGenerate(std::vector<int32_t>(300, 7), 2, &alone)).ok());
  alone.done.WaitForNotification();
  ASSERT_TRUE(alone.status.ok()) << alone.status;
  EXPECT_EQ(alone.summary.time_to_first_token, absl::Milliseconds(310));
}

// An encode cancelled, or past its deadline, while its batch is mid-flight is
// answered at once; the other request in the batch gets its exact result.
TEST_F(SchedulerTest, EncodeCancelledOrExpiredMidBatchLeavesTheOthersUnaffected) {
  std::atomic<int64_t> now_ns{absl::ToUnixNanos(absl::Now())};
  FakeEncodeBackend encode;
  encode.slices = 6;
  auto cancel_me = std::make_shared<RequestControl>();
  auto expire_me = std::make_shared<RequestControl>();
  expire_me->deadline = absl::FromUnixNanos(now_ns.load()) + absl::Microseconds(2500);
  encode.on_slice = [&](int) {
    now_ns += 1'000'000;  // 1 ms per slice: the deadline passes during the third
    if (encode.slices_run == 2) cancel_me->cancelled.store(true);
  };
  SchedulerOptions options;
  options.clock = [&] { return absl::FromUnixNanos(now_ns.load()); };
  options.encode_max_batch_size = 3;  // the three requests fill one batch
  options.encode_max_wait = absl::Seconds(30);
  Scheduler scheduler(options, &encode, nullptr, &metrics_);
  absl::Notification done[3];
  absl::Status status[3];
  float sum_kept = -1;
  std::shared_ptr<RequestControl> controls[3] = {cancel_me, std::make_shared<RequestControl>(), expire_me};
  for (int r = 0; r < 3; ++r) {
    EncodeTask task;
    task.inputs = {{false, "", {r + 1, r + 1}}};
    task.control = controls[r];
    task.done = [&, r](absl::StatusOr<std::vector<EncodeResult>> results, const v1::EncodeUsage&) {
      status[r] = results.status();
      if (results.ok()) sum_kept = (*results)[0].embedding.f32()[1];
      done[r].Notify();
    };
    ASSERT_TRUE(scheduler.SubmitEncode(std::move(task)).ok());
  }
  for (auto& d : done) d.WaitForNotification();
  ASSERT_TRUE(scheduler.WaitIdle(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(status[0].code(), absl::StatusCode::kCancelled) << status[0];
  EXPECT_THAT(status[0].message(), HasSubstr("while encoding"));
  EXPECT_EQ(status[2].code(), absl::StatusCode::kDeadlineExceeded) << status[2];
  ASSERT_TRUE(status[1].ok()) << status[1];
  EXPECT_EQ(sum_kept, 4);
  EXPECT_THAT(encode.batch_sizes, ::testing::ElementsAre(3));
  EXPECT_EQ(encode.jobs_finished, 1);
  EXPECT_EQ(encode.slices_run, 6);
}

// When every request of a batch in flight has gone, the rest of its slices
// are not computed.
TEST_F(SchedulerTest, EncodeBatchWithNobodyLeftIsAbandoned) {
  FakeEncodeBackend encode;
  encode.slices = 1000;
  auto control = std::make_shared<RequestControl>();
  encode.on_slice = [&](int) {
    if (encode.slices_run == 3) control->cancelled.store(true);
  };
  Scheduler scheduler(SchedulerOptions{}, &encode, nullptr, &metrics_);
  EncodeOutcome out;
  ASSERT_TRUE(scheduler.SubmitEncode(MakeEncode({{true, "abc", {}}, {true, "abcd", {}}}, control, &out)).ok());
  out.done.WaitForNotification();
  ASSERT_TRUE(scheduler.WaitIdle(absl::Now() + absl::Seconds(10)));
  EXPECT_EQ(out.status.code(), absl::StatusCode::kCancelled);
  EXPECT_EQ(encode.jobs_finished, 0);
  EXPECT_EQ(encode.jobs_destroyed_unfinished, 1);
  EXPECT_LT(encode.slices_run, 10);
}

// Drain lets a half-done encode batch finish; shutdown abandons one and
// answers UNAVAILABLE, without waiting for its remaining slices.
TEST_F(SchedulerTest, DrainFinishesAHalfDoneEncodeAndShutdownAbandonsOne) {
  for (const bool shutdown : {false, true}) {
    SCOPED_TRACE(shutdown ? "shutdown" : "drain");
    FakeEncodeBackend encode;
    encode.slices = shutdown ? 1'000'000 : 20;
    absl::Notification first_slice;
    encode.on_slice = [&](int) {
      if (!first_slice.HasBeenNotified()) first_slice.Notify();
      absl::SleepFor(absl::Milliseconds(1));
    };
    Scheduler scheduler(SchedulerOptions{}, &encode, nullptr, &metrics_);
    EncodeOutcome out;
    ASSERT_TRUE(
        scheduler.SubmitEncode(MakeEncode({{true, "abc", {}}}, std::make_shared<RequestControl>(), &out)).ok());
    first_slice.WaitForNotification();
    if (shutdown) {
      scheduler.Shutdown();
      ASSERT_TRUE(out.done.HasBeenNotified());
      EXPECT_EQ(out.status.code(), absl::StatusCode::kUnavailable) << out.status;
      EXPECT_EQ(encode.jobs_destroyed_unfinished, 1);
    } else {
      scheduler.BeginDrain();
      EncodeTask late;
      late.inputs = {{true, "x", {}}};
      late.done = [](absl::StatusOr<std::vector<EncodeResult>>, const v1::EncodeUsage&) { FAIL() << "refused"; };
      EXPECT_EQ(scheduler.SubmitEncode(std::move(late)).code(), absl::StatusCode::kUnavailable);
      ASSERT_TRUE(scheduler.WaitIdle(absl::Now() + absl::Seconds(10)));
      ASSERT_TRUE(out.done.HasBeenNotified());
      EXPECT_TRUE(out.status.ok()) << out.status;
      EXPECT_EQ(encode.jobs_finished, 1);
      EXPECT_EQ(encode.slices_run, 20);
    }
  }
}

TEST_F(SchedulerTest, EngineWorkRunsWithTheConfiguredOpenMpThreadCount) {
  // OpenMP counts are per thread: the scheduler thread must set its own, or
  // --threads would not reach the engine (engine/core/engine_thread.h).
  for (const int threads : {1, 2}) {
    FakeGenerateBackend generate(/*blocks=*/100);
    std::atomic<int> seen{-1};
    generate.on_step = [&] { seen = omp_get_max_threads(); };
    SchedulerOptions options;
    options.engine_threads = threads;
    GenerateOutcome out;
    {
      Scheduler scheduler(options, nullptr, &generate, &metrics_);
      ASSERT_TRUE(scheduler.SubmitGenerate(MakeGenerate({1, 2, 3}, 2, &out)).ok());
      out.done.WaitForNotification();
    }
    EXPECT_EQ(seen.load(), threads);
  }
}

}  // namespace
}  // namespace attnserve
