#include "server/http/http_server.h"

#include <civetweb.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "server/http/peer_socket.h"

namespace attnserve {
namespace {

const char* ReasonPhrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 411: return "Length Required";
    case 413: return "Payload Too Large";
    case 429: return "Too Many Requests";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    default: return "Status";
  }
}

std::string JsonEscape(const std::string& s) {
  std::string out;
  out.reserve(s.size() + 8);
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (c < 0x20) {
          out += absl::StrFormat("\\u%04x", c);
        } else {
          out += static_cast<char>(c);
        }
    }
  }
  return out;
}

// Reads and drops what is left of a refused body (up to `cap` bytes), so the
// client, which sends the whole body before reading, gets the 413 instead of a
// connection reset.
void DiscardBody(mg_connection* conn, int64_t cap) {
  char buf[16384];
  for (int64_t total = 0; total < cap;) {
    const int r = mg_read(conn, buf, sizeof(buf));
    if (r <= 0) return;
    total += r;
  }
}

constexpr int64_t kMaxDiscardBytes = int64_t{256} << 20;

}  // namespace

std::string JsonError(const std::string& code, const std::string& message) {
  return absl::StrCat("{\"error\":{\"code\":\"", JsonEscape(code), "\",\"message\":\"", JsonEscape(message),
                      "\"}}");
}

namespace {

void AppendHeaders(const std::vector<std::pair<std::string, std::string>>& headers, std::string* head) {
  for (const auto& [name, value] : headers) absl::StrAppend(head, name, ": ", value, "\r\n");
}

}  // namespace

void HttpResponseWriter::AddHeader(std::string name, std::string value) {
  headers_.emplace_back(std::move(name), std::move(value));
}

void HttpResponseWriter::Send(int status, const std::string& content_type, const std::string& body,
                              const std::vector<std::pair<std::string, std::string>>& extra_headers) {
  status_ = status;
  std::string head = absl::StrFormat("HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %d\r\n", status,
                                     ReasonPhrase(status), content_type, body.size());
  AppendHeaders(headers_, &head);
  AppendHeaders(extra_headers, &head);
  head += "\r\n";
  mg_write(conn_, head.data(), head.size());
  if (!body.empty()) mg_write(conn_, body.data(), body.size());
}

bool HttpResponseWriter::StartStream(int status, const std::string& content_type) {
  streaming_ = true;
  status_ = status;
  std::string head = absl::StrFormat(
      "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n", status,
      ReasonPhrase(status), content_type);
  AppendHeaders(headers_, &head);
  head += "\r\n";
  return mg_write(conn_, head.data(), head.size()) > 0;
}

bool HttpResponseWriter::Write(const std::string& data) {
  if (data.empty()) return true;
  return mg_send_chunk(conn_, data.data(), static_cast<unsigned int>(data.size())) > 0;
}

void HttpResponseWriter::EndStream() {
  if (!streaming_ || ended_) return;
  ended_ = true;
  static constexpr char kLastChunk[] = "0\r\n\r\n";
  mg_write(conn_, kLastChunk, sizeof(kLastChunk) - 1);
}

bool HttpResponseWriter::ClientGone() {
  if (conn_ == nullptr) return false;
  if (fd_ == -2) {
    const mg_request_info* info = mg_get_request_info(conn_);
    fd_ = info == nullptr ? -1
                          : FindAcceptedSocket(local_port_ > 0 ? local_port_ : info->server_port, info->remote_addr,
                                               info->remote_port);
  }
  return fd_ >= 0 && PeerClosed(fd_);
}

absl::StatusOr<std::unique_ptr<HttpServer>> HttpServer::Start(const HttpServerOptions& options,
                                                              std::map<std::string, HttpHandler> routes) {
  mg_init_library(0);
  std::unique_ptr<HttpServer> server(new HttpServer());
  server->routes_ = std::move(routes);
  server->max_body_bytes_ = options.max_body_bytes;
  absl::StatusOr<std::unique_ptr<HandlerThreads>> handlers = HandlerThreads::Start(options.threads);
  if (!handlers.ok()) return handlers.status();
  server->handlers_ = *std::move(handlers);

  const std::string ports = absl::StrCat(options.listen_address, ":", options.port);
  const std::string threads = std::to_string(options.threads);
  const char* mg_options[] = {"listening_ports", ports.c_str(), "num_threads", threads.c_str(),
                              "request_timeout_ms", "600000", "enable_keep_alive", "yes",
                              nullptr};
  mg_callbacks callbacks;
  std::memset(&callbacks, 0, sizeof(callbacks));
  // Silence civetweb's own stderr logging of errors we report ourselves.
  callbacks.log_message = [](const mg_connection*, const char*) { return 1; };

  mg_init_data init;
  std::memset(&init, 0, sizeof(init));
  init.callbacks = &callbacks;
  init.user_data = server.get();
  init.configuration_options = mg_options;
  char error_text[256] = {0};
  mg_error_data error;
  std::memset(&error, 0, sizeof(error));
  error.text = error_text;
  error.text_buffer_size = sizeof(error_text);

  server->ctx_ = mg_start2(&init, &error);
  if (server->ctx_ == nullptr) {
    return absl::UnavailableError(
        absl::StrCat("--http-port: cannot listen on ", ports, ": ", error_text[0] ? error_text : "bind failed"));
  }
  mg_server_port port_info[4];
  const int n = mg_get_server_ports(server->ctx_, 4, port_info);
  server->port_ = n > 0 ? port_info[0].port : options.port;
  mg_set_request_handler(server->ctx_, "/", &HttpServer::Dispatch, server.get());
  return server;
}

HttpServer::~HttpServer() {
  if (ctx_ != nullptr) mg_stop(ctx_);
}

int HttpServer::Dispatch(mg_connection* conn, void* self_ptr) {
  // On civetweb's worker (100 KiB stack): only hand over and wait.
  auto* self = static_cast<HttpServer*>(self_ptr);
  int status = 500;
  self->handlers_->RunAndWait([&] { status = self->Serve(conn); });
  return status;
}

int HttpServer::Serve(mg_connection* conn) {
  HttpServer* self = this;
  const mg_request_info* info = mg_get_request_info(conn);
  HttpResponseWriter writer(conn, self->port_);
  HttpRequest request;
  request.method = info->request_method ? info->request_method : "";
  request.path = info->local_uri ? info->local_uri : "";
  request.query = info->query_string ? info->query_string : "";
  for (int i = 0; i < info->num_headers; ++i) {
    std::string name = info->http_headers[i].name;
    std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
    request.headers[name] = info->http_headers[i].value;
  }

  auto route = self->routes_.find(request.path);
  if (route == self->routes_.end()) {
    writer.Send(404, "application/json", JsonError("not_found", absl::StrCat("no route for path '", request.path, "'")));
    return 404;
  }
  if (info->content_length > self->max_body_bytes_) {
    writer.Send(413, "application/json",
                JsonError("payload_too_large", absl::StrCat("request body is ", info->content_length,
                                                            " bytes; the limit is ", self->max_body_bytes_,
                                                            " bytes (--http-max-body-bytes)")),
                {{"Connection", "close"}});
    DiscardBody(conn, kMaxDiscardBytes);
    return 413;
  }
  // Read the body (Content-Length or chunked), bounded by the limit.
  char buf[16384];
  for (;;) {
    const int r = mg_read(conn, buf, sizeof(buf));
    if (r <= 0) break;
    request.body.append(buf, r);
    if (static_cast<int64_t>(request.body.size()) > self->max_body_bytes_) {
      writer.Send(413, "application/json",
                  JsonError("payload_too_large", absl::StrCat("request body exceeds the limit of ",
                                                              self->max_body_bytes_, " bytes (--http-max-body-bytes)")),
                  {{"Connection", "close"}});
      DiscardBody(conn, kMaxDiscardBytes);
      return 413;
    }
  }
  route->second(request, writer);
  writer.EndStream();
  return 200;
}

}  // namespace attnserve
