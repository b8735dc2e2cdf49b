// DYNAMIX — the few TCP socket calls the watchdog needs: a listening socket on an ephemeral port,
// this host's IPv4 addresses, a connect with a deadline, and non-blocking message I/O. The
// watchdog's channel is independent of MPI on purpose: it must work while MPI is stuck.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace dynamix {

// Listens on all interfaces on a port the kernel picks; returns the fd and sets *port.
int tcp_listen_any(uint16_t* port);

// This host's IPv4 addresses of interfaces that are up: others first, loopback last.
std::vector<std::string> local_ipv4_addresses();

// Connects to ip:port within timeout_s; returns a non-blocking fd, or -1 (errno kept).
int tcp_connect(const std::string& ip, uint16_t port, double timeout_s);

// Accepts one pending connection as a non-blocking fd, or -1.
int tcp_accept(int listen_fd);

// Sends all `size` bytes without blocking for long (a peer that stopped reading loses
// heartbeats, not our thread). Returns false if the peer is gone.
bool tcp_send(int fd, const void* data, size_t size);

enum class RecvStatus { kData, kNothing, kClosed };

// Appends what is readable now to *buffer.
RecvStatus tcp_recv_available(int fd, std::string* buffer);

void tcp_close(int fd);

}  // namespace dynamix
