// DYNAMIX — the /proc fallback: interface bytes (/proc/net/dev), TCP retransmitted segments
// (/proc/net/snmp), and per-socket srtt/cwnd/bytes of the watched processes via sock_diag.
#include <sstream>
#include <string_view>

#include "bpf/net_probe.h"
#include "bpf/proc_file.h"
#include "bpf/sock_diag.h"
#include "framework/core/error.h"

namespace dynamix {

namespace {

// Sum of rx and tx bytes over every interface of this network namespace (lo included: ranks on
// one host talk over it). Line: "  eth0: rx_bytes packets errs drop fifo frame compressed
// multicast tx_bytes ...".
bool read_dev(std::string_view text, uint64_t& rx, uint64_t& tx) {
  rx = tx = 0;
  bool any = false;
  size_t line = 0;
  while (line < text.size()) {
    size_t end = text.find('\n', line);
    if (end == std::string_view::npos) end = text.size();
    std::string_view l = text.substr(line, end - line);
    line = end + 1;
    size_t colon = l.find(':');
    if (colon == std::string_view::npos) continue;  // the two header lines have '|' but no ':'
    size_t pos = colon + 1;
    uint64_t v[9] = {0};
    int got = 0;
    while (got < 9 && next_u64(l, pos, v[got])) ++got;
    if (got < 9) continue;
    rx += v[0];
    tx += v[8];
    any = true;
  }
  return any;
}

// RetransSegs from the "Tcp:" header/value line pair of /proc/net/snmp (values may be negative,
// e.g. MaxConn -1, hence the token parser).
bool read_retrans(std::string_view text, uint64_t& retrans) {
  size_t h = text.find("\nTcp:");
  if (h == std::string_view::npos) return false;
  size_t h_end = text.find('\n', h + 1);
  size_t v_end = text.find('\n', h_end + 1);
  if (h_end == std::string_view::npos) return false;
  std::istringstream names(std::string(text.substr(h + 1, h_end - h - 1)));
  std::istringstream values(std::string(text.substr(h_end + 1, v_end - h_end - 1)));
  std::string name, value;
  while (names >> name && values >> value) {
    if (name == "RetransSegs") {
      retrans = std::stoull(value);
      return true;
    }
  }
  return false;
}

class ProcfsProbe : public NetProbe {
 public:
  explicit ProcfsProbe(std::vector<int> pids) : pids_(std::move(pids)) {
    if (!dev_.ok()) throw Error("cannot open /proc/net/dev: /proc not mounted or not readable");
    if (!read_dev(dev_.read(), base_rx_, base_tx_)) throw Error("/proc/net/dev has no interface lines");
    read_retrans(snmp_.read(), base_retrans_);
    try {
      diag_ = std::make_unique<SockDiag>();
    } catch (const Error& e) {
      diag_reason_ = e.what();  // interface totals still work; no per-socket state
    }
  }

  std::string source() const override { return "procfs"; }

  std::string detail() const override {
    std::string d = "/proc/net/dev (all interfaces), /proc/net/snmp RetransSegs";
    d += diag_ ? ", sock_diag tcp_info" : ", no per-socket data (" + diag_reason_ + ")";
    d += pids_.empty() ? " for all processes" : " for " + std::to_string(pids_.size()) + " pid(s)";
    return d;
  }

  NetReading read() override {
    NetReading r;
    uint64_t rx = 0, tx = 0, retrans = 0;
    if (read_dev(dev_.read(), rx, tx)) {
      r.rx_bytes = rx >= base_rx_ ? rx - base_rx_ : 0;
      r.tx_bytes = tx >= base_tx_ ? tx - base_tx_ : 0;
    }
    if (read_retrans(snmp_.read(), retrans))
      r.retransmits = retrans >= base_retrans_ ? retrans - base_retrans_ : 0;
    if (diag_) {
      std::unordered_map<uint32_t, int> owned;
      if (!pids_.empty()) owned = socket_inodes_of(pids_);
      for (const TcpSocketInfo& s : diag_->dump()) {
        int pid = 0;
        if (!pids_.empty()) {
          auto it = owned.find(s.inode);
          if (it == owned.end()) continue;
          pid = it->second;
        }
        FlowStats f;
        f.key = s.key;
        f.tx_bytes = s.bytes_acked;
        f.rx_bytes = s.bytes_received;
        f.retransmits = s.total_retrans;
        f.srtt_us = s.srtt_us;
        f.cwnd = s.snd_cwnd;
        f.pid = pid;
        r.flows.push_back(f);
      }
      FlowDeltaTracker::Totals t = tracker_.update(r.flows);
      r.srtt_us = t.srtt_us;
      r.cwnd = t.cwnd;
    }
    return r;
  }

 private:
  std::vector<int> pids_;
  ProcFile dev_{"/proc/net/dev"};
  ProcFile snmp_{"/proc/net/snmp"};
  uint64_t base_rx_ = 0, base_tx_ = 0, base_retrans_ = 0;
  std::unique_ptr<SockDiag> diag_;
  std::string diag_reason_;
  FlowDeltaTracker tracker_;
};

}  // namespace

std::unique_ptr<NetProbe> make_procfs_probe(const std::vector<int>& pids) {
  return std::make_unique<ProcfsProbe>(pids);
}

}  // namespace dynamix
