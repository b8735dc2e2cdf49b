// DYNAMIX — NetProbe: per-flow TCP counters from eBPF, /proc, or nothing, chosen once at start.
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace dynamix {

// A TCP flow seen from its local socket. Addresses in network byte order (IPv4 in bytes 0..3).
struct FlowKey {
  int family = 0;  // AF_INET or AF_INET6
  std::array<uint8_t, 16> saddr{};
  std::array<uint8_t, 16> daddr{};
  uint16_t sport = 0;  // local port, host order
  uint16_t dport = 0;  // remote port, host order
  bool operator==(const FlowKey& o) const {
    return family == o.family && sport == o.sport && dport == o.dport && saddr == o.saddr && daddr == o.daddr;
  }
  std::string str() const;  // "127.0.0.1:5000 -> 127.0.0.1:40000"
};

struct FlowKeyHash {
  size_t operator()(const FlowKey& k) const;
};

struct FlowStats {
  FlowKey key;
  uint64_t tx_bytes = 0, rx_bytes = 0, retransmits = 0;        // cumulative
  uint64_t d_tx_bytes = 0, d_rx_bytes = 0, d_retransmits = 0;  // since the previous read
  uint32_t srtt_us = 0, cwnd = 0;                              // latest seen
  int pid = 0;                                                 // owning process, 0 if unknown
};

// One read of a probe. Totals are cumulative since the probe started; srtt/cwnd are averaged
// over the flows that moved data since the previous read, weighted by the bytes they moved
// (0 when no flow was active).
struct NetReading {
  uint64_t tx_bytes = 0, rx_bytes = 0, retransmits = 0;
  double srtt_us = 0, cwnd = 0;
  std::vector<FlowStats> flows;
};

class NetProbe {
 public:
  virtual ~NetProbe() = default;
  virtual std::string source() const = 0;  // "ebpf" | "procfs" | "none"
  virtual std::string detail() const = 0;  // how it is attached / what it reads, for logs
  virtual NetReading read() = 0;           // cheap: once per decision window
};

// Which attach point the eBPF probe prefers; tests force the second and third tiers.
enum class AttachKind { kAuto, kRawTracepoint, kTracepoint, kKprobe, kNone };
const char* attach_kind_name(AttachKind k);

// Each factory throws dynamix::Error with the reason when its source cannot work here.
// pids: processes to watch (empty = all).
std::unique_ptr<NetProbe> make_ebpf_probe(const std::vector<int>& pids, AttachKind force = AttachKind::kAuto);
std::unique_ptr<NetProbe> make_procfs_probe(const std::vector<int>& pids);
std::unique_ptr<NetProbe> make_null_probe(const std::string& reason);
bool ebpf_compiled_in();

// Turns per-flow cumulative counters into per-flow deltas and the weighted srtt/cwnd.
// A counter that went backwards (flow evicted and recreated, socket replaced) restarts at zero.
class FlowDeltaTracker {
 public:
  struct Totals {
    uint64_t d_tx_bytes = 0, d_rx_bytes = 0, d_retransmits = 0;
    double srtt_us = 0, cwnd = 0;
  };
  Totals update(std::vector<FlowStats>& flows);  // fills the d_* fields in place

 private:
  std::unordered_map<FlowKey, FlowStats, FlowKeyHash> prev_;
};

}  // namespace dynamix
