// DYNAMIX tests — TcpPair: sockets made in a namespace by a short-lived thread that setns()es.
#include "tests/bpf/tcp_pair.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>
#include <thread>
#include <vector>

namespace dynamix::test {

namespace {

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

[[noreturn]] void fail(const std::string& what) {
  throw std::runtime_error(what + ": " + std::strerror(errno));
}

// A socket lives in the namespace it was created in, whatever thread uses it later.
int tcp_socket_in(const std::string& ns) {
  if (ns.empty()) return ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  int fd = -1, err = 0;
  std::thread t([&] {
    int nsfd = ::open(("/var/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
    if (nsfd < 0 || ::setns(nsfd, CLONE_NEWNET) != 0) {
      err = errno;
    } else {
      fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
      err = errno;
    }
    if (nsfd >= 0) ::close(nsfd);
  });
  t.join();
  errno = err;
  return fd;
}

uint16_t local_port(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof(a);
  if (::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) fail("getsockname");
  return ntohs(a.sin_port);
}

}  // namespace

TcpPair::TcpPair(const std::string& server_addr, const std::string& client_ns, const std::string& server_ns) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  if (::inet_pton(AF_INET, server_addr.c_str(), &addr.sin_addr) != 1) fail("inet_pton " + server_addr);
  listen_fd_ = tcp_socket_in(server_ns);
  if (listen_fd_ < 0) fail("server socket in ns '" + server_ns + "'");
  if (::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) fail("bind " + server_addr);
  if (::listen(listen_fd_, 1) != 0) fail("listen");
  server_port_ = local_port(listen_fd_);
  addr.sin_port = htons(server_port_);

  client_fd_ = tcp_socket_in(client_ns);
  if (client_fd_ < 0) fail("client socket in ns '" + client_ns + "'");
  timeval tv{2, 0};  // never hang a test on a dead path
  ::setsockopt(client_fd_, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  if (::connect(client_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0)
    fail("connect " + server_addr);
  client_port_ = local_port(client_fd_);
  pollfd p{listen_fd_, POLLIN, 0};
  if (::poll(&p, 1, 5000) != 1) fail("accept timed out");
  server_fd_ = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
  if (server_fd_ < 0) fail("accept");
}

TcpPair::~TcpPair() {
  for (int fd : {client_fd_, server_fd_, listen_fd_}) {
    if (fd >= 0) ::close(fd);
  }
}

size_t TcpPair::transfer(size_t n, double timeout_s) {
  const double deadline = now_s() + timeout_s;
  size_t received = 0;
  std::thread server([&] {
    std::vector<char> buf(64 * 1024);
    while (received < n) {
      const double left = deadline - now_s();
      if (left <= 0) break;
      pollfd p{server_fd_, POLLIN, 0};
      if (::poll(&p, 1, int(left * 1000) + 1) <= 0) continue;
      ssize_t r = ::recv(server_fd_, buf.data(), buf.size(), 0);
      if (r <= 0) break;
      received += size_t(r);
    }
  });
  std::vector<char> data(64 * 1024, 'x');
  size_t sent = 0;
  while (sent < n && now_s() < deadline) {
    ssize_t w = ::send(client_fd_, data.data(), std::min(data.size(), n - sent), MSG_NOSIGNAL);
    if (w < 0) {
      if (errno == EINTR || errno == EAGAIN) continue;
      break;
    }
    sent += size_t(w);
  }
  server.join();
  return received;
}

int sh(const std::string& cmd) {
  int rc = std::system(cmd.c_str());
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

}  // namespace dynamix::test
