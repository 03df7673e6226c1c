#include "server/http/http_server.h"

#include <pthread.h>

#include <atomic>

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

// Uses about `pages` x 4 KiB of stack; the volatile buffer and the use after
// the recursive call keep the compiler from folding it away.
int UseStack(int pages) {
  volatile char page[4096];
  page[pages % 4096] = static_cast<char>(pages);
  const int below = pages > 0 ? UseStack(pages - 1) : 0;
  return below + page[pages % 4096];
}

size_t CurrentStackBytes() {
  pthread_attr_t attr;
  size_t bytes = 0;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstacksize(&attr, &bytes);
    pthread_attr_destroy(&attr);
  }
  return bytes;
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

// civetweb's workers have a fixed 100 KiB stack (Debian's libcivetweb);
// handlers run on our own threads, so 1 MiB of stack in a handler is fine.
// Without that the server process dies of a stack overflow here.
TEST(HttpServerTest, HandlersRunOnThreadsWithALargeStack) {
  std::atomic<size_t> handler_stack{0};
  std::map<std::string, HttpHandler> routes;
  routes["/deep"] = [&](const HttpRequest&, HttpResponseWriter& w) {
    handler_stack = CurrentStackBytes();
    w.Send(200, "text/plain", std::to_string(UseStack(256)));
  };
  HttpServerOptions options;
  options.listen_address = "127.0.0.1";
  options.port = 0;
  options.threads = 2;
  absl::StatusOr<std::unique_ptr<HttpServer>> server = HttpServer::Start(options, routes);
  ASSERT_TRUE(server.ok()) << server.status();
  for (int i = 0; i < 4; ++i) {
    EXPECT_TRUE(ProbeHttp("127.0.0.1", (*server)->port(), "/deep", absl::Seconds(10)).ok());
  }
  EXPECT_GE(handler_stack.load(), HandlerThreads::kDefaultStackBytes);
}

TEST(HandlerThreadsTest, RunsOnAnotherThreadWithTheAskedStackAndWaits) {
  absl::StatusOr<std::unique_ptr<HandlerThreads>> pool = HandlerThreads::Start(2, size_t{4} << 20);
  ASSERT_TRUE(pool.ok()) << pool.status();
  for (int i = 0; i < 8; ++i) {
    pthread_t ran_on{};
    size_t stack = 0;
    bool finished = false;
    (*pool)->RunAndWait([&] {
      ran_on = pthread_self();
      stack = CurrentStackBytes();
      finished = true;
    });
    EXPECT_TRUE(finished);  // RunAndWait returned only after the job ran
    EXPECT_FALSE(pthread_equal(ran_on, pthread_self()));
    EXPECT_GE(stack, size_t{4} << 20);
  }
  EXPECT_FALSE(HandlerThreads::Start(0).ok());
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
