// ServerMetrics: every Prometheus metric family the server exports, defined
// once, owned by one registry, and injected into the components that record.
// Every family is visible from start-up: the label values it can take are
// created eagerly, so dashboards and alerts never query a missing series.
// Thread-safe (prometheus-cpp metrics are). README.md documents each metric.
#ifndef ATTNSERVE_SERVER_METRICS_METRICS_H_
#define ATTNSERVE_SERVER_METRICS_METRICS_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/histogram.h"
#include "prometheus/registry.h"

namespace attnserve {

struct BuildLabels {
  std::string version;
  std::string onednn_version;
  std::string cpu_isa;
  int threads = 0;
};

// The two kinds of work the scheduler runs.
enum class WorkKind { kEncode, kGenerate };
// Where a cancelled request was when it was cancelled.
enum class RequestPhase { kQueued, kPrefill, kDecode };
// The engine's working buffers, by what holds them (label `part`): the
// largest encode batch's activations so far, the decoder's step buffers
// (kept at the largest step's size), the compute kernels' per-thread buffers.
enum class ScratchPart { kEncodeBatch, kDecodeStep, kKernelPanels };
// Why a request was refused before running.
enum class RejectReason { kQueueFull, kKvBudget, kInvalidArgument, kDraining, kHttpBusy };

class ServerMetrics {
 public:
  explicit ServerMetrics(const BuildLabels& build);

  // Counts a finished RPC or HTTP request: attnserve_requests_total{rpc,code}.
  void RecordRequest(const std::string& rpc, absl::StatusCode code);
  // The HTTP API's routes, answered or not, by route and status class
  // (attnserve_http_requests_total{route,status}, status "2xx" / "4xx" /
  // "5xx" / "none" when the client left before any answer) and their
  // duration, arrival to the answer's last byte
  // (attnserve_http_request_duration_seconds{route}), as vLLM exports per
  // handler. RegisterHttpRoutes creates every route's series at start-up.
  void RegisterHttpRoutes(const std::vector<std::string>& routes);
  void RecordHttpRequest(const std::string& route, int http_status, double seconds);
  void RecordRejection(RejectReason reason);
  void RecordCancellation(RequestPhase phase, int64_t kv_bytes_reclaimed, int64_t tokens_wasted);

  void SetReady(bool ready);

  // The Prometheus text exposition of every family; refreshes the process
  // gauges and the scheduler thread's CPU counters first.
  std::string Scrape();

  // The thread that runs the engine (the scheduler's) says who it is, so that
  // scrapes can report its time on a CPU and its time waiting for one
  // (attnserve_scheduler_thread_cpu_seconds_total{state}). Why: the
  // scheduler's overhead metric is wall time, which grows when the thread
  // waits for a core (an oversubscribed node, a spent CPU quota, a client
  // on the same machine) as much as when it works; the wait counter tells
  // the two apart.
  void SetSchedulerThread(int tid);

  // Direct handles for the scheduler and adapters.
  prometheus::Histogram& queue_time(WorkKind kind) { return kind == WorkKind::kEncode ? queue_encode_ : queue_generate_; }
  prometheus::Histogram& request_duration(WorkKind kind) {
    return kind == WorkKind::kEncode ? duration_encode_ : duration_generate_;
  }
  prometheus::Histogram& prompt_tokens(WorkKind kind) {
    return kind == WorkKind::kEncode ? prompt_tokens_encode_ : prompt_tokens_generate_;
  }
  prometheus::Histogram& batch_size(WorkKind kind) { return kind == WorkKind::kEncode ? batch_encode_ : batch_generate_; }
  prometheus::Histogram& step_duration(WorkKind kind) {
    return kind == WorkKind::kEncode ? step_encode_ : step_generate_;
  }
  prometheus::Gauge& queued_requests(WorkKind kind) { return kind == WorkKind::kEncode ? queued_encode_ : queued_generate_; }
  prometheus::Histogram& time_to_first_token() { return ttft_; }
  prometheus::Histogram& inter_token_latency() { return itl_; }
  prometheus::Histogram& generated_tokens() { return generated_tokens_; }
  prometheus::Histogram& step_tokens() { return step_tokens_; }
  prometheus::Histogram& encode_padding_ratio() { return padding_ratio_; }
  prometheus::Histogram& prefill_duration() { return prefill_duration_; }
  prometheus::Histogram& decode_duration() { return decode_duration_; }
  prometheus::Histogram& scheduler_overhead() { return overhead_; }
  prometheus::Histogram& scheduler_overhead_ratio() { return overhead_ratio_; }
  prometheus::Counter& tokens_prompt() { return tokens_prompt_; }
  prometheus::Counter& tokens_generated() { return tokens_generated_; }
  prometheus::Counter& tokens_encoded() { return tokens_encoded_; }
  prometheus::Counter& preemptions() { return preemptions_; }
  // Prompt tokens of every admitted Generate sequence, and of them those
  // taken from shared prefix blocks instead of computed (vLLM's
  // prefix_cache_queries / prefix_cache_hits).
  prometheus::Counter& prefix_cache_query_tokens() { return prefix_queries_; }
  prometheus::Counter& prefix_cache_hit_tokens() { return prefix_hits_; }
  prometheus::Gauge& running_sequences() { return running_sequences_; }
  prometheus::Gauge& kv_blocks_used() { return kv_blocks_used_; }
  prometheus::Gauge& kv_blocks_total() { return kv_blocks_total_; }
  // Blocks no sequence holds that still hold a published prompt prefix:
  // free (an allocation may evict them), and reused by a prompt that starts
  // the same (engine/kv/kv_cache.h).
  prometheus::Gauge& kv_blocks_cached() { return kv_blocks_cached_; }
  prometheus::Gauge& json_mask_bytes() { return json_mask_bytes_; }
  prometheus::Gauge& kv_used_bytes() { return kv_used_bytes_; }
  prometheus::Gauge& kv_capacity_bytes() { return kv_capacity_bytes_; }
  prometheus::Gauge& weight_bytes(WorkKind kind) { return kind == WorkKind::kEncode ? weights_encoder_ : weights_decoder_; }
  prometheus::Gauge& scratch_bytes(ScratchPart part) {
    switch (part) {
      case ScratchPart::kEncodeBatch: return scratch_encode_;
      case ScratchPart::kDecodeStep: return scratch_decode_;
      case ScratchPart::kKernelPanels: break;
    }
    return scratch_panels_;
  }
  prometheus::Gauge& saturation() { return saturation_; }

  prometheus::Registry& registry() { return *registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Family<prometheus::Counter>& http_requests_;
  prometheus::Family<prometheus::Histogram>& http_duration_;
  prometheus::Histogram &queue_encode_, &queue_generate_, &duration_encode_, &duration_generate_;
  prometheus::Histogram &prompt_tokens_encode_, &prompt_tokens_generate_, &batch_encode_, &batch_generate_;
  prometheus::Histogram &step_encode_, &step_generate_, &ttft_, &itl_, &generated_tokens_, &step_tokens_;
  prometheus::Histogram &padding_ratio_, &prefill_duration_, &decode_duration_, &overhead_, &overhead_ratio_;
  prometheus::Counter &tokens_prompt_, &tokens_generated_, &tokens_encoded_, &preemptions_;
  prometheus::Counter &prefix_queries_, &prefix_hits_;
  prometheus::Counter &reject_queue_full_, &reject_kv_budget_, &reject_invalid_, &reject_draining_,
      &reject_http_busy_;
  prometheus::Counter &cancel_queued_, &cancel_prefill_, &cancel_decode_, &cancel_kv_bytes_, &cancel_tokens_;
  prometheus::Gauge &queued_encode_, &queued_generate_, &running_sequences_, &kv_blocks_used_, &kv_blocks_total_;
  prometheus::Gauge &kv_blocks_cached_, &kv_used_bytes_, &kv_capacity_bytes_, &weights_encoder_, &weights_decoder_;
  prometheus::Gauge &scratch_encode_, &scratch_decode_, &scratch_panels_, &json_mask_bytes_;
  prometheus::Gauge &saturation_, &resident_bytes_, &virtual_bytes_, &start_time_, &ready_;
  prometheus::Counter &sched_cpu_running_, &sched_cpu_waiting_;
  std::atomic<int> scheduler_tid_{0};
  // What the counters above already hold of scheduler_tid_'s schedstat:
  // a scrape adds what is new since.
  std::mutex sched_mu_;
  int sched_counted_tid_ = 0;        // guarded by sched_mu_
  double sched_counted_running_ = 0;  // guarded by sched_mu_
  double sched_counted_waiting_ = 0;  // guarded by sched_mu_
};

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_METRICS_METRICS_H_
