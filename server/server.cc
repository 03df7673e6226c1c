#include "server/server.h"

#include <cstdlib>
#include <optional>

#include "absl/log/log.h"
#include "absl/strings/str_cat.h"
#include "engine/core/build_info.h"
#include "engine/core/engine_thread.h"
#include "engine/runtime/decoder_engine.h"
#include "grpcpp/ext/proto_server_reflection_plugin.h"
#include "grpcpp/health_check_service_interface.h"
#include "grpcpp/server_builder.h"
#include "server/cgroup_limits.h"
#include "server/http/api_routes.h"
#include "server/http/openai_api.h"
#include "server/version.h"

namespace attnserve {
namespace {

// The engine's thread count for --threads=N: N when set; else 0 (the OpenMP
// runtime's own choice) when OMP_NUM_THREADS says it; else the CPUs this
// process may use, its affinity capped by a container's CPU quota
// (cgroup_limits.h), which the runtime's default would not see.
int ResolveEngineThreads(int flag) {
  if (flag > 0) return flag;
  if (const char* env = std::getenv("OMP_NUM_THREADS"); env != nullptr && *env != '\0') return 0;
  const int affinity = AffinityCpuCount();
  const std::optional<CgroupLimit> quota = ReadCgroupCpuQuota();
  const int threads = ThreadsForCpuBudget(affinity, quota ? std::optional<double>(quota->value) : std::nullopt);
  if (quota) {
    LOG(INFO) << "--threads=0: " << threads << " engine threads for a CPU quota of " << quota->value << " CPUs ("
              << quota->file << ") and " << affinity << " CPUs in the affinity mask";
  } else {
    LOG(INFO) << "--threads=0: " << threads << " engine threads, the CPUs in the affinity mask (no cgroup CPU quota)";
  }
  return threads;
}

// What GET /info reports of this server's limits.
ServiceInfo InfoLimits(const ServerOptions& options) {
  return ServiceInfo{.max_concurrent_requests = HttpMaxInferenceCalls(options),
                     .max_stop_sequences = kMaxStopStrings,
                     .max_prompts_per_request = static_cast<int>(kMaxCompletionChoices),
                     .encode_max_batch_tokens = options.batching.encode_max_batch_tokens,
                     .encode_max_batch_size = options.batching.encode_max_batch_size,
                     .encode_max_inputs_per_request = options.batching.encode_max_inputs_per_request,
                     .http_threads = HttpThreads(options),
                     .version = kVersion};
}

}  // namespace

Server::Server(const ServerOptions& options) : options_(options) {}

Server::~Server() { Drain(); }

absl::StatusOr<std::unique_ptr<Server>> Server::Create(const ServerOptions& requested) {
  if (absl::Status s = ValidateOptions(requested); !s.ok()) return s;
  ServerOptions options = requested;
  options.engine.threads = ResolveEngineThreads(requested.engine.threads);
  SetEngineThreads(options.engine.threads);
  std::unique_ptr<Server> server(new Server(options));

  const EngineInfo engine = GetEngineInfo();
  server->metrics_ = std::make_unique<ServerMetrics>(
      BuildLabels{kVersion, engine.onednn_version, engine.cpu_isa, engine.threads});
  // Loading runs parallel regions; on a thread that ends, so that the only
  // OpenMP worker pool left is the scheduler thread's (engine_thread.h).
  absl::StatusOr<std::unique_ptr<InferenceCore>> core = RunOnShortLivedThread(
      options.engine.threads, [&] { return InferenceCore::Create(options, server->metrics_.get()); });
  if (!core.ok()) return core.status();
  server->core_ = std::move(*core);
  server->inference_ = std::make_unique<InferenceService>(server->core_.get(), server->metrics_.get(),
                                                         options.auth.api_key);

  // gRPC: health + reflection + Inference. SO_REUSEPORT is off so that a port
  // already in use is an error instead of two servers sharing it silently.
  grpc::EnableDefaultHealthCheckService(true);
  grpc::reflection::InitProtoReflectionServerBuilderPlugin();
  grpc::ServerBuilder builder;
  builder.AddChannelArgument(GRPC_ARG_ALLOW_REUSEPORT, 0);
  const std::string grpc_address = absl::StrCat(options.network.listen_address, ":", options.network.grpc_port);
  builder.AddListeningPort(grpc_address, grpc::InsecureServerCredentials(), &server->grpc_port_);
  builder.RegisterService(server->inference_.get());
  server->grpc_ = builder.BuildAndStart();
  if (server->grpc_ == nullptr || server->grpc_port_ == 0) {
    server->StopDoors();
    return absl::UnavailableError(
        absl::StrCat("--grpc-port: cannot listen on ", grpc_address, " (port in use or address not available)"));
  }

  HttpServerOptions http;
  http.listen_address = options.network.listen_address;
  http.port = options.network.http_port;
  http.threads = HttpThreads(options);
  http.max_body_bytes = options.network.http_max_body_bytes;
  absl::StatusOr<std::unique_ptr<HttpServer>> http_server = HttpServer::Start(http, server->HttpRoutes());
  if (!http_server.ok()) {
    server->StopDoors();
    return http_server.status();
  }
  server->http_ = std::move(*http_server);

  server->grpc_->GetHealthCheckService()->SetServingStatus(true);
  server->metrics_->SetReady(true);
  server->state_.store(State::kServing);
  LOG(INFO) << "attnserve " << kVersion << " serving gRPC on " << options.network.listen_address << ":"
            << server->grpc_port_ << ", HTTP on " << options.network.listen_address << ":"
            << server->http_->port() << " (oneDNN " << engine.onednn_version << ", ISA " << engine.cpu_isa
            << ", " << engine.threads << " threads)"
            << (options.auth.api_key.empty() ? "" : "; inference calls need the API key");
  return server;
}

std::map<std::string, HttpHandler> Server::HttpRoutes() {
  const GatewayOptions gateway{.log_requests = options_.logging.log_requests,
                               .api_key = options_.auth.api_key,
                               .max_inference_calls = HttpMaxInferenceCalls(options_),
                               .tool_call_parser = options_.models.tool_call_parser,
                               .reasoning_parser = options_.models.reasoning_parser,
                               .structured_outputs_in_reasoning = options_.models.structured_outputs_in_reasoning,
                               .thinking_token_budget = options_.models.thinking_token_budget,
                               .info = InfoLimits(options_)};
  std::map<std::string, HttpHandler> routes = ApiRoutes(core_.get(), metrics_.get(), gateway);
  routes["/healthz"] = [](const HttpRequest&, HttpResponseWriter& w) {
    w.Send(200, "text/plain; charset=utf-8", "ok\n");
  };
  routes["/readyz"] = [this](const HttpRequest&, HttpResponseWriter& w) {
    if (ready()) {
      w.Send(200, "text/plain; charset=utf-8", "ready\n");
    } else {
      w.Send(503, "text/plain; charset=utf-8", "draining\n");
    }
  };
  // TGI, TEI and vLLM answer GET /health; clients and load balancers made for
  // them probe it. Readiness semantics: 503 while draining.
  routes["/health"] = routes["/readyz"];
  // vLLM's /ping (GET or POST, SageMaker's probe): the same answer.
  routes["/ping"] = routes["/readyz"];
  routes["/version"] = [](const HttpRequest&, HttpResponseWriter& w) {
    w.Send(200, "application/json", absl::StrCat("{\"version\":\"", kVersion, "\"}"));
  };
  routes["/metrics"] = [this](const HttpRequest&, HttpResponseWriter& w) {
    w.Send(200, "text/plain; version=0.0.4; charset=utf-8", metrics_->Scrape());
  };
  return routes;
}

void Server::StopDoors() {
  if (core_ != nullptr) core_->Shutdown();
  if (grpc_ != nullptr) {
    grpc_->Shutdown(std::chrono::system_clock::now());
    grpc_->Wait();
  }
  http_.reset();
}

void Server::Drain() {
  State expected = State::kServing;
  if (!state_.compare_exchange_strong(expected, State::kDraining)) return;
  metrics_->SetReady(false);
  grpc_->GetHealthCheckService()->SetServingStatus(false);
  core_->BeginDrain();
  // After BeginDrain nothing new is admitted, so the count only falls.
  LOG(INFO) << "draining: readiness off, " << core_->InFlight()
            << " requests in flight; waiting up to " << options_.queue.drain_timeout;
  const absl::Time deadline = absl::Now() + options_.queue.drain_timeout;
  if (!core_->WaitIdle(deadline)) {
    LOG(WARNING) << "drain deadline reached with requests in flight; ending them with UNAVAILABLE";
  }
  core_->Shutdown();
  // Every request has its final status now; give the doors a moment to send
  // them, then close.
  grpc_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(2));
  grpc_->Wait();
  http_.reset();
  state_.store(State::kStopped);
  LOG(INFO) << "drained; stopped";
}

}  // namespace attnserve
