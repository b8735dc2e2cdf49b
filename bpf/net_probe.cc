// DYNAMIX — NetProbe helpers shared by every source: flow keys, deltas, the null probe.
#include "bpf/net_probe.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <cstring>

#include "framework/core/error.h"

namespace dynamix {

namespace {

std::string addr_str(int family, const std::array<uint8_t, 16>& a) {
  static const uint8_t kV4Mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  char buf[INET6_ADDRSTRLEN] = {0};
  if (family == AF_INET) {
    inet_ntop(AF_INET, a.data(), buf, sizeof(buf));
  } else if (std::memcmp(a.data(), kV4Mapped, 12) == 0) {  // dual-stack socket carrying IPv4
    inet_ntop(AF_INET, a.data() + 12, buf, sizeof(buf));
  } else {
    inet_ntop(AF_INET6, a.data(), buf, sizeof(buf));
    return std::string("[") + buf + "]";
  }
  return buf;
}

class NullProbe : public NetProbe {
 public:
  explicit NullProbe(std::string reason) : reason_(std::move(reason)) {}
  std::string source() const override { return "none"; }
  std::string detail() const override { return reason_; }
  NetReading read() override { return {}; }

 private:
  std::string reason_;
};

}  // namespace

std::string FlowKey::str() const {
  return addr_str(family, saddr) + ":" + std::to_string(sport) + " -> " + addr_str(family, daddr) + ":" +
         std::to_string(dport);
}

size_t FlowKeyHash::operator()(const FlowKey& k) const {
  // FNV-1a over the fields; flows number in the hundreds, quality matters little.
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const uint8_t* p, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  mix(k.saddr.data(), 16);
  mix(k.daddr.data(), 16);
  uint8_t ports[5] = {uint8_t(k.sport), uint8_t(k.sport >> 8), uint8_t(k.dport), uint8_t(k.dport >> 8),
                      uint8_t(k.family)};
  mix(ports, sizeof(ports));
  return static_cast<size_t>(h);
}

const char* attach_kind_name(AttachKind k) {
  switch (k) {
    case AttachKind::kAuto:
      return "auto";
    case AttachKind::kRawTracepoint:
      return "raw_tp";
    case AttachKind::kTracepoint:
      return "tp";
    case AttachKind::kKprobe:
      return "kprobe";
    case AttachKind::kNone:
      return "none";
  }
  return "?";
}

FlowDeltaTracker::Totals FlowDeltaTracker::update(std::vector<FlowStats>& flows) {
  auto delta = [](uint64_t cur, uint64_t prev) { return cur >= prev ? cur - prev : cur; };
  Totals t;
  double w_sum = 0, srtt_w = 0, cwnd_w = 0;
  std::unordered_map<FlowKey, FlowStats, FlowKeyHash> next;
  next.reserve(flows.size());
  for (FlowStats& f : flows) {
    auto it = prev_.find(f.key);
    if (it == prev_.end()) {
      f.d_tx_bytes = f.tx_bytes;
      f.d_rx_bytes = f.rx_bytes;
      f.d_retransmits = f.retransmits;
    } else {
      f.d_tx_bytes = delta(f.tx_bytes, it->second.tx_bytes);
      f.d_rx_bytes = delta(f.rx_bytes, it->second.rx_bytes);
      f.d_retransmits = delta(f.retransmits, it->second.retransmits);
    }
    t.d_tx_bytes += f.d_tx_bytes;
    t.d_rx_bytes += f.d_rx_bytes;
    t.d_retransmits += f.d_retransmits;
    const double w = double(f.d_tx_bytes + f.d_rx_bytes);
    if (w > 0 && f.srtt_us > 0) {
      w_sum += w;
      srtt_w += w * f.srtt_us;
      cwnd_w += w * f.cwnd;
    }
    next.emplace(f.key, f);
  }
  if (w_sum > 0) {
    t.srtt_us = srtt_w / w_sum;
    t.cwnd = cwnd_w / w_sum;
  }
  prev_ = std::move(next);
  return t;
}

std::unique_ptr<NetProbe> make_null_probe(const std::string& reason) {
  return std::make_unique<NullProbe>(reason);
}

}  // namespace dynamix

#if !DYNAMIX_HAVE_BPF
namespace dynamix {

bool ebpf_compiled_in() { return false; }

std::unique_ptr<NetProbe> make_ebpf_probe(const std::vector<int>&, AttachKind) {
  throw Error(
      "eBPF unavailable: this build has no eBPF probes (clang, bpftool, libbpf or /sys/kernel/btf/vmlinux "
      "was missing at configure time; see DYNAMIX_WITH_BPF)");
}

}  // namespace dynamix
#endif
