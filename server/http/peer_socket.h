// Noticing that an HTTP client went away while its handler waits.
//
// civetweb 1.16 (Debian 13) exposes no accessor for a connection's socket,
// and a handler that has read the whole body never touches the socket again
// until it writes the answer, so a client that disconnects while a
// non-streaming request runs would only be noticed at the final write. These
// helpers find the connection's socket from its TCP 4-tuple (local port,
// peer address and port, which civetweb does report) among the process's
// open descriptors, and test it for EOF or reset without consuming bytes.
// Linux-only (/proc/self/fd, POLLRDHUP).
#ifndef ATTNSERVE_SERVER_HTTP_PEER_SOCKET_H_
#define ATTNSERVE_SERVER_HTTP_PEER_SOCKET_H_

#include <string>

namespace attnserve {

// The descriptor of the accepted TCP socket whose local port is `local_port`
// and whose peer is `peer_address`:`peer_port` (address as text, IPv4 or
// IPv6; an IPv4-mapped IPv6 peer matches its IPv4 text); -1 if none. The
// descriptor stays owned by whoever accepted it.
int FindAcceptedSocket(int local_port, const std::string& peer_address, int peer_port);

// True when the peer closed or reset the connection (or the socket failed).
// Never blocks and never consumes data: bytes the client already sent (e.g.
// a pipelined request) mean it is still there.
bool PeerClosed(int fd);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_HTTP_PEER_SOCKET_H_
