// DYNAMIX — TCP sockets with their tcp_info through NETLINK_SOCK_DIAG (what `ss -ti` reads).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "bpf/net_probe.h"

namespace dynamix {

struct TcpSocketInfo {
  FlowKey key;
  uint32_t inode = 0;
  uint64_t bytes_acked = 0;  // sent and acknowledged
  uint64_t bytes_received = 0;
  uint32_t total_retrans = 0;
  uint32_t srtt_us = 0;
  uint32_t snd_cwnd = 0;
};

class SockDiag {
 public:
  SockDiag();  // throws dynamix::Error when the netlink socket cannot be opened
  ~SockDiag();
  SockDiag(const SockDiag&) = delete;
  SockDiag& operator=(const SockDiag&) = delete;

  // Every non-listening IPv4 and IPv6 TCP socket of this network namespace.
  std::vector<TcpSocketInfo> dump();

 private:
  void dump_family(int family, std::vector<TcpSocketInfo>& out);
  int fd_ = -1;
  uint32_t seq_ = 0;
  std::vector<char> buf_;
};

// Socket inodes owned by the processes (from /proc/<pid>/fd links "socket:[inode]") -> pid.
std::unordered_map<uint32_t, int> socket_inodes_of(const std::vector<int>& pids);

}  // namespace dynamix
