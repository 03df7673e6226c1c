// HttpServer: the HTTP door (civetweb). Routes are exact paths mapped to
// handlers; a handler reads an HttpRequest and answers through an
// HttpResponseWriter (a whole body, or a chunked stream for server-sent
// events). Thread-safe: handlers run on the server's own threads
// (handler_threads.h), one per civetweb worker, with an 8 MiB stack.
#ifndef ATTNSERVE_SERVER_HTTP_HTTP_SERVER_H_
#define ATTNSERVE_SERVER_HTTP_HTTP_SERVER_H_

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/http/handler_threads.h"

struct mg_context;
struct mg_connection;

namespace attnserve {

struct HttpRequest {
  std::string method;  // "GET", "POST", ...
  std::string path;    // without the query string
  std::string query;   // after '?', undecoded
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;
};

// Writes one response. Either Send() once, or StartStream() then Write()*.
class HttpResponseWriter {
 public:
  // `local_port`: the server port the connection came in on (to find its
  // socket for ClientGone).
  explicit HttpResponseWriter(mg_connection* conn, int local_port = 0) : conn_(conn), local_port_(local_port) {}

  // A header sent with whatever response this writer sends (Send or
  // StartStream), e.g. the request id; call before either.
  void AddHeader(std::string name, std::string value);
  // A complete response with Content-Length.
  void Send(int status, const std::string& content_type, const std::string& body,
            const std::vector<std::pair<std::string, std::string>>& extra_headers = {});
  // Starts a chunked response (for text/event-stream). Returns false when the
  // client is gone.
  bool StartStream(int status, const std::string& content_type);
  // Writes one chunk; false when the client is gone.
  bool Write(const std::string& data);
  // Ends a chunked response (the zero-length chunk). The server calls it
  // after the handler returns if the handler did not.
  void EndStream();
  // True once the client has closed or reset the connection. Does not block
  // or consume input; for handlers that wait before answering (see
  // peer_socket.h). The first call looks up the connection's socket.
  bool ClientGone();
  // The status answered (Send or StartStream); 0 before either.
  int status() const { return status_; }

 private:
  mg_connection* conn_;
  int local_port_;
  int fd_ = -2;  // the connection's socket; -2 not looked up yet, -1 not found
  int status_ = 0;
  std::vector<std::pair<std::string, std::string>> headers_;  // from AddHeader
  bool streaming_ = false;
  bool ended_ = false;
};

using HttpHandler = std::function<void(const HttpRequest&, HttpResponseWriter&)>;

struct HttpServerOptions {
  std::string listen_address = "0.0.0.0";
  int port = 8080;  // 0 = a free port
  int threads = 8;
  int64_t max_body_bytes = 8 << 20;
};

class HttpServer {
 public:
  // Binds and starts serving `routes` (exact path -> handler). Fails with the
  // address and civetweb's reason when the port cannot be bound.
  static absl::StatusOr<std::unique_ptr<HttpServer>> Start(const HttpServerOptions& options,
                                                           std::map<std::string, HttpHandler> routes);
  ~HttpServer();  // stops the server, waiting for handlers to return
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  int port() const { return port_; }

 private:
  HttpServer() = default;
  static int Dispatch(mg_connection* conn, void* self);
  // The whole request (headers, body, route handler) on a HandlerThreads
  // thread; returns the status civetweb logs.
  int Serve(mg_connection* conn);

  // Members die after ~HttpServer's body, whose mg_stop waits for every
  // civetweb worker: no worker can be left waiting on a gone pool.
  std::unique_ptr<HandlerThreads> handlers_;
  mg_context* ctx_ = nullptr;
  int port_ = 0;
  int64_t max_body_bytes_ = 0;
  std::map<std::string, HttpHandler> routes_;
};

// The JSON error body every HTTP error uses: {"error":{"code":..,"message":..}}.
std::string JsonError(const std::string& code, const std::string& message);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_HTTP_SERVER_H_
