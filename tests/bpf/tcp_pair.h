// DYNAMIX tests — a TCP connection the test owns (loopback, or across namespaces it created).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace dynamix::test {

// Server listens on server_addr:0 and a client connects to it; sockets are created inside the
// named network namespaces (/var/run/netns/<name>) when given. Both stay open until destruction
// so per-socket state (tcp_info) can still be read after the transfer.
class TcpPair {
 public:
  TcpPair(const std::string& server_addr, const std::string& client_ns = "",
          const std::string& server_ns = "");
  ~TcpPair();
  TcpPair(const TcpPair&) = delete;
  TcpPair& operator=(const TcpPair&) = delete;

  // Client sends n bytes while a server thread reads them; returns bytes the server received
  // before timeout_s.
  size_t transfer(size_t n, double timeout_s);

  uint16_t client_port() const { return client_port_; }
  uint16_t server_port() const { return server_port_; }

 private:
  int listen_fd_ = -1, client_fd_ = -1, server_fd_ = -1;
  uint16_t client_port_ = 0, server_port_ = 0;
};

// Runs a shell command, returns its exit status (stdout/stderr to the test log).
int sh(const std::string& cmd);

}  // namespace dynamix::test
