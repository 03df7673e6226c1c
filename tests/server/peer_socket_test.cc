// FindAcceptedSocket / PeerClosed on real loopback TCP sockets.
#include "server/http/peer_socket.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gtest/gtest.h"

namespace attnserve {
namespace {

int Port(int fd, bool peer) {
  sockaddr_in a{};
  socklen_t len = sizeof(a);
  if (peer) {
    getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len);
  } else {
    getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  }
  return ntohs(a.sin_port);
}

// A listening socket, a client connected to it and the accepted end.
struct Connection {
  Connection() {
    listener = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    listen(listener, 4);
    socklen_t len = sizeof(a);
    getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len);
    client = socket(AF_INET, SOCK_STREAM, 0);
    connect(client, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    accepted = accept(listener, nullptr, nullptr);
  }
  ~Connection() {
    for (int fd : {listener, client, accepted}) {
      if (fd >= 0) close(fd);
    }
  }
  int listener = -1, client = -1, accepted = -1;
};

TEST(PeerSocketTest, FindsTheAcceptedEndByItsFourTuple) {
  Connection c;
  ASSERT_GE(c.accepted, 0);
  const int server_port = Port(c.listener, false);
  const int client_port = Port(c.client, false);
  EXPECT_EQ(FindAcceptedSocket(server_port, "127.0.0.1", client_port), c.accepted);
  // IPv4-mapped text (as a dual-stack listener reports it) names the same peer.
  EXPECT_EQ(FindAcceptedSocket(server_port, "::ffff:127.0.0.1", client_port), c.accepted);
  // Seen from the other end, the 4-tuple names the client's socket instead.
  EXPECT_EQ(FindAcceptedSocket(client_port, "127.0.0.1", server_port), c.client);
  // The listener has no peer; a wrong peer port or address matches nothing.
  EXPECT_EQ(FindAcceptedSocket(server_port, "127.0.0.1", server_port), -1);
  EXPECT_EQ(FindAcceptedSocket(server_port, "127.0.0.2", client_port), -1);
}

TEST(PeerSocketTest, NoticesCloseButNotPendingData) {
  Connection c;
  ASSERT_GE(c.accepted, 0);
  EXPECT_FALSE(PeerClosed(c.accepted));
  // Bytes waiting (a pipelined request) are not a close, and stay unread.
  ASSERT_EQ(send(c.client, "x", 1, 0), 1);
  usleep(10000);
  EXPECT_FALSE(PeerClosed(c.accepted));
  char byte = 0;
  ASSERT_EQ(recv(c.accepted, &byte, 1, MSG_DONTWAIT), 1);
  EXPECT_EQ(byte, 'x');
  close(c.client);
  c.client = -1;
  usleep(10000);
  EXPECT_TRUE(PeerClosed(c.accepted));
}

TEST(PeerSocketTest, NoticesReset) {
  Connection c;
  ASSERT_GE(c.accepted, 0);
  linger l{1, 0};  // close with RST
  setsockopt(c.client, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  close(c.client);
  c.client = -1;
  usleep(10000);
  EXPECT_TRUE(PeerClosed(c.accepted));
}

}  // namespace
}  // namespace attnserve
