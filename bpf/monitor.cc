// DYNAMIX — Monitor: chooses the network source once (eBPF -> /proc -> none) and samples all.
#include "bpf/monitor.h"

#include <time.h>

#include <iostream>

#include "framework/core/error.h"

namespace dynamix {

namespace {

double now_s() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

std::unique_ptr<NetProbe> procfs_or_none(const std::vector<int>& pids, std::string& reason) {
  try {
    return make_procfs_probe(pids);
  } catch (const Error& e) {
    reason += (reason.empty() ? "" : "; ") + std::string(e.what());
    return make_null_probe(reason);
  }
}

}  // namespace

std::unique_ptr<Monitor> Monitor::create(EbpfMode ebpf_mode, std::vector<int> pids, int gpu_index) {
  std::unique_ptr<NetProbe> net;
  std::string reason;
  switch (ebpf_mode) {
    case EbpfMode::kOn:
      net = make_ebpf_probe(pids);  // throws with the reason
      break;
    case EbpfMode::kAuto:
      try {
        net = make_ebpf_probe(pids);
      } catch (const Error& e) {
        reason = e.what();
        net = procfs_or_none(pids, reason);
        std::cerr << "[dynamix monitor] " << reason << "; network source: " << net->source() << "\n";
      }
      break;
    case EbpfMode::kOff:
      reason = "eBPF disabled (monitor.ebpf=off)";
      net = procfs_or_none(pids, reason);
      break;
  }
  return std::make_unique<Monitor>(std::move(net), std::move(reason), gpu_index);
}

Monitor::Monitor(std::unique_ptr<NetProbe> net, std::string fallback_reason, int gpu_index)
    : net_(std::move(net)), fallback_reason_(std::move(fallback_reason)), gpu_(gpu_index) {
  last_net_ = net_->read();  // baseline: the first sample() reports rates since now
  last_wall_s_ = now_s();
}

MonitorSample Monitor::sample() {
  MonitorSample s;
  const SysSample sys = sys_.sample();
  s.cpu_util_process = sys.cpu_util_process;
  s.cpu_util_machine = sys.cpu_util_machine;
  s.mem_rss_bytes = sys.mem_rss_bytes;
  s.mem_available_bytes = sys.mem_available_bytes;

  const GpuSample gpu = gpu_.sample();
  s.gpu_util = gpu.util;
  s.gpu_mem_used_bytes = gpu.mem_used_bytes;
  s.gpu_mem_total_bytes = gpu.mem_total_bytes;
  s.gpu_power_w = gpu.power_w;
  s.gpu_sm_clock_mhz = gpu.sm_clock_mhz;

  NetReading net = net_->read();
  const double wall = now_s();
  s.interval_s = wall - last_wall_s_;
  if (s.interval_s > 0) {
    auto rate = [&](uint64_t cur, uint64_t prev) {
      return cur >= prev ? double(cur - prev) / s.interval_s : 0.0;
    };
    s.net_tx_bytes_per_s = rate(net.tx_bytes, last_net_.tx_bytes);
    s.net_rx_bytes_per_s = rate(net.rx_bytes, last_net_.rx_bytes);
    s.net_retransmits_per_s = rate(net.retransmits, last_net_.retransmits);
  }
  s.net_srtt_us = net.srtt_us;
  s.net_cwnd = net.cwnd;
  last_net_ = std::move(net);
  last_wall_s_ = wall;
  return s;
}

}  // namespace dynamix
