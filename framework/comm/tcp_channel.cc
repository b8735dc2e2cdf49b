// DYNAMIX — TCP helpers for the watchdog channel.
#include "framework/comm/tcp_channel.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <set>

#include "framework/config/choices.h"
#include "framework/core/error.h"
#include "framework/core/host.h"

namespace dynamix {
namespace {

void set_nonblocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL, 0) | O_NONBLOCK); }

void set_nodelay(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

// The port of an IPv4 or IPv6 socket address.
uint16_t port_of(const sockaddr* address) {
  return address->sa_family == AF_INET6 ? ntohs(reinterpret_cast<const sockaddr_in6*>(address)->sin6_port)
                                        : ntohs(reinterpret_cast<const sockaddr_in*>(address)->sin_port);
}

}  // namespace

std::string ip_text(const sockaddr* address) {
  char ip[INET6_ADDRSTRLEN] = "?";
  if (address->sa_family == AF_INET) {
    ::inet_ntop(AF_INET, &reinterpret_cast<const sockaddr_in*>(address)->sin_addr, ip, sizeof(ip));
  } else if (address->sa_family == AF_INET6) {
    ::inet_ntop(AF_INET6, &reinterpret_cast<const sockaddr_in6*>(address)->sin6_addr, ip, sizeof(ip));
  }
  return ip;
}

std::string endpoint_text(const sockaddr* address) { return host_port(ip_text(address), port_of(address)); }

std::string host_port(const std::string& ip, uint16_t port) {
  const bool v6 = ip.find(':') != std::string::npos;
  return (v6 ? "[" + ip + "]" : ip) + ":" + std::to_string(port);
}

int address_family(const std::string& name, const std::string& key) {
  switch (parse_choice<AddressFamily>(name, key)) {
    case AddressFamily::kIpv4:
      return AF_INET;
    case AddressFamily::kIpv6:
      return AF_INET6;
    case AddressFamily::kAuto:
      break;
  }
  return AF_UNSPEC;
}

int tcp_listen_any(int family, uint16_t* port) {
  const int fd = ::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw Error(std::string("watchdog: socket() failed: ") + std::strerror(errno));
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  if (family == AF_INET6) {
    int only = 1;  // this socket serves IPv6; the IPv4 listener is another one
    ::setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &only, sizeof(only));
    auto* a = reinterpret_cast<sockaddr_in6*>(&addr);
    a->sin6_family = AF_INET6;
    a->sin6_addr = in6addr_any;
    len = sizeof(sockaddr_in6);
  } else {
    auto* a = reinterpret_cast<sockaddr_in*>(&addr);
    a->sin_family = AF_INET;
    a->sin_addr.s_addr = htonl(INADDR_ANY);
    len = sizeof(sockaddr_in);
  }
  auto* any = reinterpret_cast<sockaddr*>(&addr);
  if (::bind(fd, any, len) != 0 || ::listen(fd, SOMAXCONN) != 0 || ::getsockname(fd, any, &len) != 0) {
    const int e = errno;
    ::close(fd);
    throw Error(std::string("watchdog: cannot listen on a TCP port: ") + std::strerror(e));
  }
  *port = port_of(any);
  set_nonblocking(fd);
  return fd;
}

LocalAddresses local_addresses(const std::string& interface, int family, const std::string& interface_key,
                               const std::string& family_key) {
  std::vector<std::string> v4, v6, loop4, loop6;
  std::set<std::string> names;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0)
    throw Error(std::string("watchdog: getifaddrs() failed: ") + std::strerror(errno));
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    names.insert(i->ifa_name);
    if (!interface.empty() && interface != i->ifa_name) continue;
    if (!i->ifa_addr || !(i->ifa_flags & IFF_UP)) continue;
    const int f = i->ifa_addr->sa_family;
    if (f != AF_INET && f != AF_INET6) continue;
    const bool loopback = i->ifa_flags & IFF_LOOPBACK;
    std::string ip = ip_text(i->ifa_addr);
    if (f == AF_INET6) {
      // A link-local address needs its interface: the same name on every node (as NCCL assumes).
      if (IN6_IS_ADDR_LINKLOCAL(&reinterpret_cast<sockaddr_in6*>(i->ifa_addr)->sin6_addr)) {
        if (interface.empty()) continue;
        ip += "%" + interface;
      }
    }
    (f == AF_INET ? (loopback ? loop4 : v4) : (loopback ? loop6 : v6)).push_back(ip);
  }
  ::freeifaddrs(list);
  const std::string host = host_name();
  if (!interface.empty() && !names.count(interface)) {
    std::string known;
    for (const auto& n : names) known += (known.empty() ? "" : ", ") + n;
    throw Error(interface_key + ": no network interface '" + interface + "' on " + host +
                " (it has: " + known + ")");
  }
  v4.insert(v4.end(), loop4.begin(), loop4.end());
  v6.insert(v6.end(), loop6.begin(), loop6.end());
  LocalAddresses out;
  out.family = family == AF_UNSPEC ? (!v4.empty() || v6.empty() ? AF_INET : AF_INET6) : family;
  out.ips = out.family == AF_INET ? v4 : v6;
  if (out.ips.empty()) {
    const std::string kind = out.family == AF_INET ? "IPv4" : "IPv6";
    throw Error(interface.empty()
                    ? family_key + ": no interface that is up on " + host + " has an " + kind + " address"
                    : interface_key + ": interface '" + interface + "' on " + host + " is down or has no " +
                          kind + " address (" + family_key + ")");
  }
  return out;
}

int tcp_connect(const std::string& ip, uint16_t port, double timeout_s) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICHOST | AI_NUMERICSERV;  // text from rank 0: no name lookups
  addrinfo* found = nullptr;
  if (::getaddrinfo(ip.c_str(), std::to_string(port).c_str(), &hints, &found) != 0 || !found) {
    errno = EINVAL;
    return -1;
  }
  const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) {
    ::freeaddrinfo(found);
    return -1;
  }
  set_nonblocking(fd);
  const int rc_connect = ::connect(fd, found->ai_addr, found->ai_addrlen);
  const int e_connect = errno;
  ::freeaddrinfo(found);
  if (rc_connect != 0 && e_connect != EINPROGRESS) {
    ::close(fd);
    errno = e_connect;
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

int tcp_accept(int listen_fd, std::string* peer) {
  sockaddr_storage from{};
  socklen_t len = sizeof(from);
  const int fd = ::accept4(listen_fd, reinterpret_cast<sockaddr*>(&from), &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
  if (fd < 0) return fd;
  set_nodelay(fd);
  if (peer) *peer = endpoint_text(reinterpret_cast<const sockaddr*>(&from));
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
