#include "server/metrics/metrics.h"

#include "prometheus/text_serializer.h"
#include "server/metrics/process_stats.h"
#include "server/status_util.h"

namespace attnserve {

ServerMetrics::ServerMetrics(const BuildLabels& build)
    : registry_(std::make_shared<prometheus::Registry>()),
      requests_(prometheus::BuildCounter()
                    .Name("attnserve_requests_total")
                    .Help("Finished requests by RPC (or HTTP route) and status code.")
                    .Register(*registry_)),
      resident_bytes_(prometheus::BuildGauge()
                          .Name("attnserve_process_resident_memory_bytes")
                          .Help("Resident set size of the server process, from /proc/self/statm.")
                          .Register(*registry_)
                          .Add({})),
      virtual_bytes_(prometheus::BuildGauge()
                         .Name("attnserve_process_virtual_memory_bytes")
                         .Help("Virtual memory size of the server process, from /proc/self/statm.")
                         .Register(*registry_)
                         .Add({})),
      start_time_(prometheus::BuildGauge()
                      .Name("attnserve_process_start_time_seconds")
                      .Help("Start time of the process since the Unix epoch, seconds.")
                      .Register(*registry_)
                      .Add({})),
      ready_(prometheus::BuildGauge()
                 .Name("attnserve_ready")
                 .Help("1 when the server is ready for traffic (models loaded, not draining), else 0.")
                 .Register(*registry_)
                 .Add({})) {
  prometheus::BuildGauge()
      .Name("attnserve_build_info")
      .Help("Build and engine information; the value is always 1.")
      .Register(*registry_)
      .Add({{"version", build.version},
            {"onednn_version", build.onednn_version},
            {"cpu_isa", build.cpu_isa},
            {"threads", std::to_string(build.threads)}})
      .Set(1);
  start_time_.Set(ReadProcessStats().start_time_seconds);
}

void ServerMetrics::RecordRequest(const std::string& rpc, absl::StatusCode code) {
  requests_.Add({{"rpc", rpc}, {"code", StatusCodeName(code)}}).Increment();
}

void ServerMetrics::SetReady(bool ready) { ready_.Set(ready ? 1 : 0); }

std::string ServerMetrics::Scrape() {
  const ProcessStats stats = ReadProcessStats();
  resident_bytes_.Set(static_cast<double>(stats.resident_bytes));
  virtual_bytes_.Set(static_cast<double>(stats.virtual_bytes));
  return prometheus::TextSerializer().Serialize(registry_->Collect());
}

}  // namespace attnserve
