#include "server/http/peer_socket.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "absl/strings/match.h"

namespace attnserve {
namespace {

// Port and address text of a socket address (IPv4-mapped IPv6 as IPv4).
bool Describe(const sockaddr_storage& addr, int* port, std::string* text) {
  char buf[INET6_ADDRSTRLEN] = {0};
  if (addr.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&addr);
    *port = ntohs(in->sin_port);
    if (text != nullptr && inet_ntop(AF_INET, &in->sin_addr, buf, sizeof(buf)) == nullptr) return false;
  } else if (addr.ss_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(&addr);
    *port = ntohs(in6->sin6_port);
    if (text != nullptr && inet_ntop(AF_INET6, &in6->sin6_addr, buf, sizeof(buf)) == nullptr) return false;
  } else {
    return false;
  }
  if (text != nullptr) {
    *text = buf;
    if (absl::StartsWith(*text, "::ffff:") && text->find('.') != std::string::npos) *text = text->substr(7);
  }
  return true;
}

std::string Unmapped(const std::string& address) {
  return absl::StartsWith(address, "::ffff:") && address.find('.') != std::string::npos ? address.substr(7)
                                                                                          : address;
}

}  // namespace

int FindAcceptedSocket(int local_port, const std::string& peer_address, int peer_port) {
  const std::string want = Unmapped(peer_address);
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return -1;
  int found = -1;
  while (const dirent* entry = readdir(dir)) {
    char* end = nullptr;
    const long fd = std::strtol(entry->d_name, &end, 10);
    if (end == entry->d_name || *end != '\0' || fd == dirfd(dir)) continue;
    struct stat st;
    if (fstat(static_cast<int>(fd), &st) != 0 || !S_ISSOCK(st.st_mode)) continue;
    sockaddr_storage local{}, peer{};
    socklen_t local_len = sizeof(local), peer_len = sizeof(peer);
    if (getsockname(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&local), &local_len) != 0) continue;
    if (getpeername(static_cast<int>(fd), reinterpret_cast<sockaddr*>(&peer), &peer_len) != 0) continue;
    int lport = 0, pport = 0;
    std::string paddr;
    if (!Describe(local, &lport, nullptr) || !Describe(peer, &pport, &paddr)) continue;
    if (lport == local_port && pport == peer_port && paddr == want) {
      found = static_cast<int>(fd);
      break;
    }
  }
  closedir(dir);
  return found;
}

bool PeerClosed(int fd) {
  pollfd p{fd, POLLIN | POLLRDHUP, 0};
  const int n = poll(&p, 1, 0);
  if (n < 0) return errno != EINTR;
  if (n == 0) return false;
  if ((p.revents & (POLLERR | POLLHUP | POLLNVAL)) != 0) return true;
  if ((p.revents & POLLIN) != 0) {
    char byte;
    const ssize_t r = recv(fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT);
    if (r == 0) return true;                                                  // orderly close (FIN)
    if (r < 0) return errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR;  // reset
    return false;                                                             // data waiting: still there
  }
  // POLLRDHUP alone: the peer shut down its writing side, i.e. closed.
  return (p.revents & POLLRDHUP) != 0;
}

}  // namespace attnserve
