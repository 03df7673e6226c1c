#include "server/http/http_server.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "server/health_probe.h"

namespace attnserve {
namespace {

using ::testing::HasSubstr;

std::map<std::string, HttpHandler> Routes() {
  std::map<std::string, HttpHandler> routes;
  routes["/ok"] = [](const HttpRequest&, HttpResponseWriter& w) { w.Send(200, "text/plain", "fine"); };
  routes["/no"] = [](const HttpRequest&, HttpResponseWriter& w) { w.Send(503, "text/plain", "nope"); };
  return routes;
}

TEST(HttpServerTest, ServesRoutesAndProbeSeesStatus) {
  HttpServerOptions options;
  options.listen_address = "127.0.0.1";
  options.port = 0;
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Start(options, Routes());
  ASSERT_TRUE(server.ok()) << server.status();
  const int port = (*server)->port();
  ASSERT_GT(port, 0);
  EXPECT_TRUE(ProbeHttp("127.0.0.1", port, "/ok", absl::Seconds(5)).ok());
  const absl::Status no = ProbeHttp("127.0.0.1", port, "/no", absl::Seconds(5));
  EXPECT_EQ(no.code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(no.message(), HasSubstr("503"));
  EXPECT_THAT(ProbeHttp("127.0.0.1", port, "/missing", absl::Seconds(5)).message(), HasSubstr("404"));
}

TEST(HttpServerTest, PortInUseIsAnErrorNamingThePort) {
  HttpServerOptions options;
  options.listen_address = "127.0.0.1";
  options.port = 0;
  absl::StatusOr<std::unique_ptr<HttpServer>> first = HttpServer::Start(options, Routes());
  ASSERT_TRUE(first.ok());
  options.port = (*first)->port();
  absl::StatusOr<std::unique_ptr<HttpServer>> second = HttpServer::Start(options, Routes());
  ASSERT_FALSE(second.ok());
  EXPECT_THAT(second.status().message(), HasSubstr(std::to_string(options.port)));
  EXPECT_THAT(second.status().message(), HasSubstr("--http-port"));
}

TEST(HttpServerTest, ProbeOfClosedPortFails) {
  HttpServerOptions options;
  options.listen_address = "127.0.0.1";
  options.port = 0;
  int port = 0;
  {
    absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Start(options, Routes());
    ASSERT_TRUE(server.ok());
    port = (*server)->port();
  }
  EXPECT_FALSE(ProbeHttp("127.0.0.1", port, "/ok", absl::Seconds(2)).ok());
}

}  // namespace
}  // namespace attnserve
