// DYNAMIX — TCP helpers for the watchdog channel.
#include "framework/comm/tcp_channel.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "framework/core/error.h"

namespace dynamix {
namespace {

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

}  // namespace

int tcp_listen_any(uint16_t* port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Error(std::string("watchdog: socket() failed: ") + std::strerror(errno));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  addr.sin_port = 0;
  socklen_t len = sizeof(addr);
  if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || ::listen(fd, SOMAXCONN) != 0 ||
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    const int e = errno;
    ::close(fd);
    throw Error(std::string("watchdog: cannot listen on a TCP port: ") + std::strerror(e));
  }
  *port = ntohs(addr.sin_port);
  set_nonblocking(fd);
  return fd;
}

std::vector<std::string> local_ipv4_addresses() {
  std::vector<std::string> others, loopback;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) == 0) {
    for (ifaddrs* i = list; i; i = i->ifa_next) {
      if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
      char text[INET_ADDRSTRLEN] = {0};
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr, text, sizeof(text));
      ((i->ifa_flags & IFF_LOOPBACK) ? loopback : others).push_back(text);
    }
    ::freeifaddrs(list);
  }
  others.insert(others.end(), loopback.begin(), loopback.end());
  return others;
}

int tcp_connect(const std::string& ip, uint16_t port, double timeout_s) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  if (::inet_pton(AF_INET, ip.c_str(), &addr.sin_addr) != 1) return -1;
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  set_nonblocking(fd);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 && errno != EINPROGRESS) {
    ::close(fd);
    return -1;
  }
  pollfd p{fd, POLLOUT, 0};
  const int rc = ::poll(&p, 1, static_cast<int>(timeout_s * 1000));
  int err = 0;
  socklen_t len = sizeof(err);
  if (rc != 1 || ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
    ::close(fd);
    errno = err ? err : ETIMEDOUT;
    return -1;
  }
  set_nodelay(fd);
  return fd;
}

int tcp_accept(int listen_fd) {
  const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd >= 0) set_nodelay(fd);
  return fd;
}

bool tcp_send(int fd, const void* data, size_t size) {
  const auto* p = static_cast<const char*>(data);
  const size_t total = size;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  while (size > 0) {
    const ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      p += n;
      size -= static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      // The peer is not reading (stopped). Skip a message not yet started: its silence is for
      // the heartbeat timeout to judge. A message cut in half would break the framing, so it
      // gets a second to finish, and the peer counts as gone if it does not.
      if (size == total) return true;
      if (std::chrono::steady_clock::now() > deadline) return false;
      pollfd pfd{fd, POLLOUT, 0};
      ::poll(&pfd, 1, 50);
      continue;
    }
    return false;
  }
  return true;
}

RecvStatus tcp_recv_available(int fd, std::string* buffer) {
  char chunk[4096];
  bool got = false;
  for (;;) {
    const ssize_t n = ::recv(fd, chunk, sizeof(chunk), MSG_DONTWAIT);
    if (n > 0) {
      buffer->append(chunk, static_cast<size_t>(n));
      got = true;
      continue;
    }
    if (n == 0) return RecvStatus::kClosed;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return got ? RecvStatus::kData : RecvStatus::kNothing;
    return RecvStatus::kClosed;  // ECONNRESET and friends: the peer is gone
  }
}

void tcp_close(int fd) {
  if (fd >= 0) ::close(fd);
}

}  // namespace dynamix
