// DYNAMIX — SockDiag: one inet_diag dump per family, parsed into TcpSocketInfo.
#include "bpf/sock_diag.h"

#include <dirent.h>
#include <errno.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "framework/core/error.h"

namespace dynamix {

namespace {

constexpr int kTcpListen = 10;  // TCP_LISTEN in the kernel's state numbering

FlowKey key_from(const inet_diag_msg& m) {
  FlowKey k;
  k.family = m.idiag_family;
  std::memcpy(k.saddr.data(), m.id.idiag_src, 16);
  std::memcpy(k.daddr.data(), m.id.idiag_dst, 16);
  if (k.family == AF_INET) {  // only the first word is meaningful
    std::fill(k.saddr.begin() + 4, k.saddr.end(), 0);
    std::fill(k.daddr.begin() + 4, k.daddr.end(), 0);
  }
  k.sport = ntohs(m.id.idiag_sport);
  k.dport = ntohs(m.id.idiag_dport);
  return k;
}

}  // namespace

SockDiag::SockDiag() : buf_(64 * 1024) {
  fd_ = ::socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
  if (fd_ < 0) throw Error(std::string("NETLINK_SOCK_DIAG socket failed: ") + std::strerror(errno));
}

SockDiag::~SockDiag() {
  if (fd_ >= 0) ::close(fd_);
}

std::vector<TcpSocketInfo> SockDiag::dump() {
  std::vector<TcpSocketInfo> out;
  dump_family(AF_INET, out);
  dump_family(AF_INET6, out);
  return out;
}

void SockDiag::dump_family(int family, std::vector<TcpSocketInfo>& out) {
  struct {
    nlmsghdr nlh;
    inet_diag_req_v2 req;
  } msg{};
  msg.nlh.nlmsg_len = sizeof(msg);
  msg.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  msg.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  msg.nlh.nlmsg_seq = ++seq_;
  msg.req.sdiag_family = uint8_t(family);
  msg.req.sdiag_protocol = IPPROTO_TCP;
  msg.req.idiag_ext = 1u << (INET_DIAG_INFO - 1);
  msg.req.idiag_states = ~(1u << kTcpListen);
  sockaddr_nl nladdr{};
  nladdr.nl_family = AF_NETLINK;
  if (::sendto(fd_, &msg, sizeof(msg), 0, reinterpret_cast<sockaddr*>(&nladdr), sizeof(nladdr)) < 0) {
    throw Error(std::string("sock_diag request failed: ") + std::strerror(errno));
  }
  for (;;) {
    ssize_t n = ::recv(fd_, buf_.data(), buf_.size(), 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(std::string("sock_diag receive failed: ") + std::strerror(errno));
    }
    auto* h = reinterpret_cast<nlmsghdr*>(buf_.data());
    int len = int(n);
    for (; NLMSG_OK(h, len); h = NLMSG_NEXT(h, len)) {
      if (h->nlmsg_seq != seq_) continue;
      if (h->nlmsg_type == NLMSG_DONE) return;
      if (h->nlmsg_type == NLMSG_ERROR) {
        auto* e = static_cast<nlmsgerr*>(NLMSG_DATA(h));
        // An address family the kernel lacks (e.g. no IPv6) is not an error for us.
        if (e->error == -ENOENT || e->error == -EAFNOSUPPORT) return;
        throw Error(std::string("sock_diag dump failed: ") + std::strerror(-e->error));
      }
      auto* m = static_cast<inet_diag_msg*>(NLMSG_DATA(h));
      TcpSocketInfo info;
      info.key = key_from(*m);
      info.inode = m->idiag_inode;
      int attr_len = int(h->nlmsg_len - NLMSG_LENGTH(sizeof(*m)));
      for (auto* a = reinterpret_cast<rtattr*>(m + 1); RTA_OK(a, attr_len); a = RTA_NEXT(a, attr_len)) {
        if (a->rta_type != INET_DIAG_INFO) continue;
        tcp_info ti{};  // older kernels send a shorter struct: the tail stays zero
        std::memcpy(&ti, RTA_DATA(a), std::min<size_t>(RTA_PAYLOAD(a), sizeof(ti)));
        info.bytes_acked = ti.tcpi_bytes_acked;
        info.bytes_received = ti.tcpi_bytes_received;
        info.total_retrans = ti.tcpi_total_retrans;
        info.srtt_us = ti.tcpi_rtt;
        info.snd_cwnd = ti.tcpi_snd_cwnd;
      }
      out.push_back(info);
    }
  }
}

std::unordered_map<uint32_t, int> socket_inodes_of(const std::vector<int>& pids) {
  std::unordered_map<uint32_t, int> inodes;
  char path[64], link[64];
  for (int pid : pids) {
    std::snprintf(path, sizeof(path), "/proc/%d/fd", pid);
    DIR* dir = ::opendir(path);
    if (!dir) continue;  // process gone or not ours to read
    while (dirent* e = ::readdir(dir)) {
      if (e->d_name[0] == '.') continue;
      std::snprintf(path, sizeof(path), "/proc/%d/fd/%s", pid, e->d_name);
      ssize_t n = ::readlink(path, link, sizeof(link) - 1);
      if (n <= 8 || std::strncmp(link, "socket:[", 8) != 0) continue;
      link[n] = 0;
      inodes[uint32_t(std::strtoul(link + 8, nullptr, 10))] = pid;
    }
    ::closedir(dir);
  }
  return inodes;
}

}  // namespace dynamix
