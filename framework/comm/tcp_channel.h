// DYNAMIX — the few TCP socket calls the watchdog needs: a listening socket on an ephemeral port,
// this host's IPv4 or IPv6 addresses (of one interface, if named), a connect with a deadline, and
// non-blocking message I/O. The watchdog's channel is independent of MPI on purpose: it must work
// while MPI is stuck.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dynamix {

// AF_UNSPEC, AF_INET or AF_INET6 for "auto", "ipv4", "ipv6"; throws dynamix::Error naming `key`.
int address_family(const std::string& name, const std::string& key);

// Listens on every address of `family` (AF_INET, AF_INET6) on a port the kernel picks; returns the
// fd and sets *port.
int tcp_listen_any(int family, uint16_t* port);

struct LocalAddresses {
  int family = 0;                // AF_INET or AF_INET6
  std::vector<std::string> ips;  // others first, loopback last; "fe80::1%eth0" for link-local
};

// This host's addresses of interfaces that are up, of `family` (AF_UNSPEC: IPv4 when there is one,
// else IPv6), on `interface` only when it is named. IPv6 link-local addresses carry the interface
// name as their scope and are taken only from a named interface (the same name on every node).
// Throws dynamix::Error naming `interface_key` when there is no such interface, and the keys when
// it is down or has no address of the family.
LocalAddresses local_addresses(const std::string& interface, int family, const std::string& interface_key,
                               const std::string& family_key);

// "192.0.2.1:5000", "[fd00::1]:5000".
std::string host_port(const std::string& ip, uint16_t port);

// Connects to ip:port (IPv4, or IPv6 with an optional %scope) within timeout_s; returns a
// non-blocking fd, or -1 (errno kept).
int tcp_connect(const std::string& ip, uint16_t port, double timeout_s);

// Accepts one pending connection as a non-blocking fd, or -1; *peer (if given): its address.
int tcp_accept(int listen_fd, std::string* peer = nullptr);

// The address of an IPv4 or IPv6 socket address as text, and with its port (host_port).
std::string ip_text(const sockaddr* address);
std::string endpoint_text(const sockaddr* address);

// Sends all `size` bytes without blocking for long (a peer that stopped reading loses
// heartbeats, not our thread). Returns false if the peer is gone.
bool tcp_send(int fd, const void* data, size_t size);

enum class RecvStatus { kData, kNothing, kClosed };

// Appends what is readable now to *buffer.
RecvStatus tcp_recv_available(int fd, std::string* buffer);

void tcp_close(int fd);

}  // namespace dynamix
