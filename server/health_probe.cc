#include "server/health_probe.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace attnserve {
namespace {

// Closes the socket on every path.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

bool WaitFor(int fd, short events, absl::Time deadline) {
  const int64_t ms = absl::ToInt64Milliseconds(deadline - absl::Now());
  if (ms <= 0) return false;
  pollfd p{fd, events, 0};
  return poll(&p, 1, static_cast<int>(ms)) == 1;
}

}  // namespace

absl::Status ProbeHttp(const std::string& host, int port, const std::string& path, absl::Duration timeout) {
  const std::string where = absl::StrCat("http://", host, ":", port, path);
  const absl::Time deadline = absl::Now() + timeout;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* addrs = nullptr;
  if (getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &addrs) != 0 || addrs == nullptr) {
    return absl::UnavailableError(absl::StrCat(where, ": cannot resolve host"));
  }
  Fd fd(socket(addrs->ai_family, SOCK_STREAM | SOCK_NONBLOCK, 0));
  const int rc = connect(fd.get(), addrs->ai_addr, addrs->ai_addrlen);
  freeaddrinfo(addrs);
  if (fd.get() < 0 || (rc != 0 && errno != EINPROGRESS)) {
    return absl::UnavailableError(absl::StrCat(where, ": connect failed: ", std::strerror(errno)));
  }
  if (!WaitFor(fd.get(), POLLOUT, deadline)) return absl::DeadlineExceededError(absl::StrCat(where, ": connect timed out"));
  int err = 0;
  socklen_t len = sizeof(err);
  getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) return absl::UnavailableError(absl::StrCat(where, ": connect failed: ", std::strerror(err)));

  const std::string request = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: ", host, "\r\n\r\n");
  if (send(fd.get(), request.data(), request.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(request.size())) {
    return absl::UnavailableError(absl::StrCat(where, ": send failed"));
  }
  std::string response;
  char buf[512];
  while (response.find("\r\n") == std::string::npos) {
    if (!WaitFor(fd.get(), POLLIN, deadline)) return absl::DeadlineExceededError(absl::StrCat(where, ": no answer in time"));
    const ssize_t n = recv(fd.get(), buf, sizeof(buf), 0);
    if (n <= 0) break;
    response.append(buf, n);
  }
  // "HTTP/1.1 200 OK"
  const std::string status_line = response.substr(0, response.find("\r\n"));
  if (status_line.size() < 12 || status_line.compare(9, 3, "200") != 0) {
    return absl::UnavailableError(absl::StrCat(where, ": answered '", status_line, "'"));
  }
  return absl::OkStatus();
}

}  // namespace attnserve
