// ServerMetrics: every Prometheus metric family the server exports, defined
// once, owned by one registry, and injected into the components that record.
// Thread-safe (prometheus-cpp metrics are).
#ifndef ATTNSERVE_SERVER_METRICS_METRICS_H_
#define ATTNSERVE_SERVER_METRICS_METRICS_H_

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace attnserve {

struct BuildLabels {
  std::string version;
  std::string onednn_version;
  std::string cpu_isa;
  int threads = 0;
};

class ServerMetrics {
 public:
  explicit ServerMetrics(const BuildLabels& build);

  // Counts a finished RPC or HTTP request: attnserve_requests_total{rpc,code}.
  void RecordRequest(const std::string& rpc, absl::StatusCode code);

  // Sets the readiness gauge (1 ready, 0 not).
  void SetReady(bool ready);

  // The Prometheus text exposition of every family; refreshes the process
  // gauges first.
  std::string Scrape();

  prometheus::Registry& registry() { return *registry_; }

 private:
  std::shared_ptr<prometheus::Registry> registry_;
  prometheus::Family<prometheus::Counter>& requests_;
  prometheus::Gauge& resident_bytes_;
  prometheus::Gauge& virtual_bytes_;
  prometheus::Gauge& start_time_;
  prometheus::Gauge& ready_;
};

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_METRICS_METRICS_H_
