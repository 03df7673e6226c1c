#include "server/metrics/metrics.h"

#include <algorithm>
#include <optional>
#include <vector>

#include "prometheus/text_serializer.h"
#include "server/metrics/process_stats.h"
#include "server/status_util.h"

namespace attnserve {
namespace {

using prometheus::Counter;
using prometheus::Gauge;
using prometheus::Histogram;
using prometheus::Labels;
using prometheus::Registry;

// Latency: 1 ms to 60 s.
const Histogram::BucketBoundaries& LatencyBuckets() {
  static const auto* b = new Histogram::BucketBoundaries{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                         0.5,   1.0,    2.5,   5.0,  10.0,  30.0, 60.0};
  return *b;
}
// Token counts per request or step: 1 to 16k.
const Histogram::BucketBoundaries& TokenBuckets() {
  static const auto* b = new Histogram::BucketBoundaries{1,   2,   4,    8,    16,   32,   64,  128,
                                                         256, 512, 1024, 2048, 4096, 8192, 16384};
  return *b;
}
const Histogram::BucketBoundaries& BatchBuckets() {
  static const auto* b = new Histogram::BucketBoundaries{1, 2, 4, 8, 16, 32, 64, 128, 256};
  return *b;
}
// Scheduler bookkeeping per loop pass: 1 us to 100 ms.
const Histogram::BucketBoundaries& OverheadBuckets() {
  static const auto* b = new Histogram::BucketBoundaries{1e-6,   2.5e-6, 5e-6, 1e-5, 2.5e-5, 5e-5, 1e-4,
                                                         2.5e-4, 5e-4,   1e-3, 2.5e-3, 5e-3, 1e-2, 0.1};
  return *b;
}
const Histogram::BucketBoundaries& RatioBuckets() {
  static const auto* b = new Histogram::BucketBoundaries{0.0, 0.05, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0};
  return *b;
}

Gauge& NewGauge(Registry& r, const std::string& name, const std::string& help, const Labels& labels = {}) {
  return prometheus::BuildGauge().Name(name).Help(help).Register(r).Add(labels);
}
Counter& NewCounter(Registry& r, const std::string& name, const std::string& help, const Labels& labels = {}) {
  return prometheus::BuildCounter().Name(name).Help(help).Register(r).Add(labels);
}
Histogram& NewHistogram(Registry& r, const std::string& name, const std::string& help,
                        const Histogram::BucketBoundaries& buckets, const Labels& labels = {}) {
  return prometheus::BuildHistogram().Name(name).Help(help).Register(r).Add(labels, buckets);
}

}  // namespace

ServerMetrics::ServerMetrics(const BuildLabels& build)
    : registry_(std::make_shared<Registry>()),
      requests_(prometheus::BuildCounter()
                    .Name("attnserve_requests_total")
                    .Help("Finished requests by RPC (or HTTP route) and status code.")
                    .Register(*registry_)),
      http_requests_(prometheus::BuildCounter()
                         .Name("attnserve_http_requests_total")
                         .Help("HTTP API requests by route and status class (none: the client left unanswered).")
                         .Register(*registry_)),
      http_duration_(prometheus::BuildHistogram()
                         .Name("attnserve_http_request_duration_seconds")
                         .Help("HTTP API requests by route, arrival to the answer's last byte.")
                         .Register(*registry_)),
      queue_encode_(NewHistogram(*registry_, "attnserve_queue_time_seconds",
                                 "Time from arrival to the first engine step that ran the request.",
                                 LatencyBuckets(), {{"rpc", "Encode"}})),
      queue_generate_(NewHistogram(*registry_, "attnserve_queue_time_seconds", "", LatencyBuckets(),
                                   {{"rpc", "Generate"}})),
      duration_encode_(NewHistogram(*registry_, "attnserve_request_duration_seconds",
                                    "End-to-end request latency, arrival to last byte.", LatencyBuckets(),
                                    {{"rpc", "Encode"}})),
      duration_generate_(NewHistogram(*registry_, "attnserve_request_duration_seconds", "", LatencyBuckets(),
                                      {{"rpc", "Generate"}})),
      prompt_tokens_encode_(NewHistogram(*registry_, "attnserve_prompt_tokens", "Input tokens per request.",
                                         TokenBuckets(), {{"rpc", "Encode"}})),
      prompt_tokens_generate_(NewHistogram(*registry_, "attnserve_prompt_tokens", "", TokenBuckets(),
                                           {{"rpc", "Generate"}})),
      batch_encode_(NewHistogram(*registry_, "attnserve_batch_size",
                                 "Sequences per engine step (encode batch or generate step).", BatchBuckets(),
                                 {{"kind", "encode"}})),
      batch_generate_(NewHistogram(*registry_, "attnserve_batch_size", "", BatchBuckets(), {{"kind", "generate"}})),
      step_encode_(NewHistogram(*registry_, "attnserve_engine_step_duration_seconds",
                                "Wall time of one engine step.", LatencyBuckets(), {{"kind", "encode"}})),
      step_generate_(NewHistogram(*registry_, "attnserve_engine_step_duration_seconds", "", LatencyBuckets(),
                                  {{"kind", "generate"}})),
      ttft_(NewHistogram(*registry_, "attnserve_time_to_first_token_seconds",
                         "Generate: arrival to the first generated token.", LatencyBuckets())),
      itl_(NewHistogram(*registry_, "attnserve_inter_token_latency_seconds",
                        "Generate: time between consecutive generated tokens of a stream.", LatencyBuckets())),
      generated_tokens_(NewHistogram(*registry_, "attnserve_generated_tokens", "Generated tokens per request.",
                                     TokenBuckets())),
      step_tokens_(NewHistogram(*registry_, "attnserve_step_tokens",
                                "Tokens processed per generate step (prefill chunks + decode tokens).",
                                TokenBuckets())),
      padding_ratio_(NewHistogram(*registry_, "attnserve_encode_padding_ratio",
                                  "Padding tokens / all tokens of each encode batch.", RatioBuckets())),
      prefill_duration_(NewHistogram(*registry_, "attnserve_prefill_duration_seconds",
                                     "Generate: time a request spent in prefill (first to last prompt chunk).",
                                     LatencyBuckets())),
      decode_duration_(NewHistogram(*registry_, "attnserve_decode_duration_seconds",
                                    "Generate: time a request spent decoding (first to last token).",
                                    LatencyBuckets())),
      overhead_(NewHistogram(*registry_, "attnserve_scheduler_overhead_seconds",
                             "Scheduler time per loop pass that ran engine work: the pass's wall time minus its "
                             "engine calls (admission, batch planning, bookkeeping, callbacks, gauges).",
                             OverheadBuckets())),
      overhead_ratio_(NewHistogram(*registry_, "attnserve_scheduler_overhead_ratio",
                                   "Scheduler overhead / wall time of each loop pass that ran engine work.",
                                   RatioBuckets())),
      tokens_prompt_(NewCounter(*registry_, "attnserve_tokens_processed_total",
                                "Tokens processed by the engine, by kind.", {{"kind", "prompt"}})),
      tokens_generated_(NewCounter(*registry_, "attnserve_tokens_processed_total", "", {{"kind", "generated"}})),
      tokens_encoded_(NewCounter(*registry_, "attnserve_tokens_processed_total", "", {{"kind", "encode"}})),
      preemptions_(NewCounter(*registry_, "attnserve_preemptions_total",
                              "Running sequences preempted (KV freed, recomputed later) for lack of KV blocks.")),
      prefix_queries_(NewCounter(*registry_, "attnserve_prefix_cache_query_tokens_total",
                                 "Prompt tokens of every Generate sequence admitted to the engine (re-admissions "
                                 "after preemption included).")),
      prefix_hits_(NewCounter(*registry_, "attnserve_prefix_cache_hit_tokens_total",
                              "Of those, tokens taken from prefix blocks shared with a running sequence instead "
                              "of computed.")),
      reject_queue_full_(NewCounter(*registry_, "attnserve_rejections_total",
                                    "Requests refused before running, by reason.", {{"reason", "queue_full"}})),
      reject_kv_budget_(NewCounter(*registry_, "attnserve_rejections_total", "", {{"reason", "kv_budget"}})),
      reject_invalid_(NewCounter(*registry_, "attnserve_rejections_total", "", {{"reason", "invalid_argument"}})),
      reject_draining_(NewCounter(*registry_, "attnserve_rejections_total", "", {{"reason", "draining"}})),
      reject_http_busy_(NewCounter(*registry_, "attnserve_rejections_total", "", {{"reason", "http_threads"}})),
      cancel_queued_(NewCounter(*registry_, "attnserve_cancellations_total",
                                "Requests cancelled (client cancel, disconnect or deadline), by phase.",
                                {{"phase", "queued"}})),
      cancel_prefill_(NewCounter(*registry_, "attnserve_cancellations_total", "", {{"phase", "prefill"}})),
      cancel_decode_(NewCounter(*registry_, "attnserve_cancellations_total", "", {{"phase", "decode"}})),
      cancel_kv_bytes_(NewCounter(*registry_, "attnserve_cancelled_kv_bytes_reclaimed_total",
                                  "KV cache bytes freed by cancellations.")),
      cancel_tokens_(NewCounter(*registry_, "attnserve_cancelled_tokens_wasted_total",
                                "Tokens computed for requests that were then cancelled.")),
      queued_encode_(NewGauge(*registry_, "attnserve_queued_requests", "Requests waiting in the queue.",
                              {{"kind", "encode"}})),
      queued_generate_(NewGauge(*registry_, "attnserve_queued_requests", "", {{"kind", "generate"}})),
      running_sequences_(NewGauge(*registry_, "attnserve_running_sequences",
                                  "Generate sequences holding KV blocks (prefilling or decoding).")),
      kv_blocks_used_(NewGauge(*registry_, "attnserve_kv_cache_blocks_used", "KV cache blocks in use.")),
      kv_blocks_total_(NewGauge(*registry_, "attnserve_kv_cache_capacity_blocks", "KV cache blocks in the pool.")),
      kv_blocks_cached_(NewGauge(*registry_, "attnserve_kv_cache_cached_blocks",
                                 "KV cache blocks no sequence holds that keep a prompt prefix for reuse (free).")),
      kv_used_bytes_(NewGauge(*registry_, "attnserve_kv_cache_used_bytes", "KV cache bytes in use (whole blocks).")),
      kv_capacity_bytes_(NewGauge(*registry_, "attnserve_kv_cache_capacity_bytes", "KV cache pool size, bytes.")),
      weights_encoder_(NewGauge(*registry_, "attnserve_weight_bytes", "Bytes of model weights held in memory.",
                                {{"model", "encoder"}})),
      weights_decoder_(NewGauge(*registry_, "attnserve_weight_bytes", "", {{"model", "decoder"}})),
      scratch_encode_(NewGauge(*registry_, "attnserve_engine_scratch_bytes",
                               "Engine working buffers, bytes: the largest encode batch's activations so far "
                               "(encode_batch), the decoder's step buffers (decode_step), the kernels' per-thread "
                               "widened weight panels (kernel_panels).",
                               {{"part", "encode_batch"}})),
      scratch_decode_(NewGauge(*registry_, "attnserve_engine_scratch_bytes", "", {{"part", "decode_step"}})),
      scratch_panels_(NewGauge(*registry_, "attnserve_engine_scratch_bytes", "", {{"part", "kernel_panels"}})),
      json_mask_bytes_(NewGauge(*registry_, "attnserve_json_mask_bytes",
                                "Constrained decoding (JSON mode, JSON schemas, choices): the sorted token table and the "
                                "cached token masks, bytes.")),
      saturation_(NewGauge(*registry_, "attnserve_saturation",
                           "Load signal for autoscaling: max(KV used / capacity, queued tokens / step budget).")),
      resident_bytes_(NewGauge(*registry_, "attnserve_process_resident_memory_bytes",
                               "Resident set size of the server process, from /proc/self/statm.")),
      virtual_bytes_(NewGauge(*registry_, "attnserve_process_virtual_memory_bytes",
                              "Virtual memory size of the server process, from /proc/self/statm.")),
      start_time_(NewGauge(*registry_, "attnserve_process_start_time_seconds",
                           "Start time of the process since the Unix epoch, seconds.")),
      ready_(NewGauge(*registry_, "attnserve_ready",
                      "1 when the server is ready for traffic (models loaded, not draining), else 0.")),
      sched_cpu_running_(NewCounter(*registry_, "attnserve_scheduler_thread_cpu_seconds_total",
                                    "The scheduler (engine) thread's time by state, from the kernel's schedstat: "
                                    "running on a CPU, or runnable and waiting for one.",
                                    {{"state", "running"}})),
      sched_cpu_waiting_(NewCounter(*registry_, "attnserve_scheduler_thread_cpu_seconds_total", "",
                                    {{"state", "waiting"}})) {
  NewGauge(*registry_, "attnserve_build_info", "Build and engine information; the value is always 1.",
           {{"version", build.version},
            {"onednn_version", build.onednn_version},
            {"cpu_isa", build.cpu_isa},
            {"threads", std::to_string(build.threads)}})
      .Set(1);
  start_time_.Set(ReadProcessStats().start_time_seconds);
}

void ServerMetrics::RecordRequest(const std::string& rpc, absl::StatusCode code) {
  requests_.Add({{"rpc", rpc}, {"code", StatusCodeName(code)}}).Increment();
}

namespace {

const char* HttpStatusClass(int status) {
  if (status >= 200 && status < 300) return "2xx";
  if (status >= 400 && status < 500) return "4xx";
  if (status >= 500 && status < 600) return "5xx";
  return "none";  // nothing was answered (the client left), or an unexpected 1xx/3xx
}

}  // namespace

void ServerMetrics::RegisterHttpRoutes(const std::vector<std::string>& routes) {
  for (const std::string& route : routes) {
    for (const char* status : {"2xx", "4xx", "5xx"}) http_requests_.Add({{"route", route}, {"status", status}});
    http_duration_.Add({{"route", route}}, LatencyBuckets());
  }
}

void ServerMetrics::RecordHttpRequest(const std::string& route, int http_status, double seconds) {
  http_requests_.Add({{"route", route}, {"status", HttpStatusClass(http_status)}}).Increment();
  http_duration_.Add({{"route", route}}, LatencyBuckets()).Observe(seconds);
}

void ServerMetrics::RecordRejection(RejectReason reason) {
  switch (reason) {
    case RejectReason::kQueueFull: reject_queue_full_.Increment(); break;
    case RejectReason::kKvBudget: reject_kv_budget_.Increment(); break;
    case RejectReason::kInvalidArgument: reject_invalid_.Increment(); break;
    case RejectReason::kDraining: reject_draining_.Increment(); break;
    case RejectReason::kHttpBusy: reject_http_busy_.Increment(); break;
  }
}

void ServerMetrics::RecordCancellation(RequestPhase phase, int64_t kv_bytes_reclaimed, int64_t tokens_wasted) {
  switch (phase) {
    case RequestPhase::kQueued: cancel_queued_.Increment(); break;
    case RequestPhase::kPrefill: cancel_prefill_.Increment(); break;
    case RequestPhase::kDecode: cancel_decode_.Increment(); break;
  }
  cancel_kv_bytes_.Increment(static_cast<double>(kv_bytes_reclaimed));
  cancel_tokens_.Increment(static_cast<double>(tokens_wasted));
}

void ServerMetrics::SetReady(bool ready) { ready_.Set(ready ? 1 : 0); }

void ServerMetrics::SetSchedulerThread(int tid) { scheduler_tid_.store(tid); }

std::string ServerMetrics::Scrape() {
  const ProcessStats stats = ReadProcessStats();
  resident_bytes_.Set(static_cast<double>(stats.resident_bytes));
  virtual_bytes_.Set(static_cast<double>(stats.virtual_bytes));
  if (const int tid = scheduler_tid_.load(); tid != 0) {
    if (const std::optional<ThreadSchedStats> now = ReadThreadSchedStats(tid)) {
      std::lock_guard<std::mutex> lock(sched_mu_);
      if (tid != sched_counted_tid_) {  // a new thread: its counts start at 0
        sched_counted_tid_ = tid;
        sched_counted_running_ = sched_counted_waiting_ = 0;
      }
      sched_cpu_running_.Increment(std::max(0.0, now->cpu_seconds - sched_counted_running_));
      sched_cpu_waiting_.Increment(std::max(0.0, now->wait_seconds - sched_counted_waiting_));
      sched_counted_running_ = std::max(sched_counted_running_, now->cpu_seconds);
      sched_counted_waiting_ = std::max(sched_counted_waiting_, now->wait_seconds);
    }
  }
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace attnserve
