// DYNAMIX — Monitor: what the agent sees of one rank (CPU, memory, GPU, network), per window.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "bpf/net_probe.h"
#include "bpf/nvml_wrap.h"
#include "bpf/sys_stats.h"
#include "framework/config/choices.h"

namespace dynamix {

// Rates and levels since the previous sample() (the first: since create()).
struct MonitorSample {
  double cpu_util_process = 0;  // cores used by this process (1.0 = one core), in [0, ncores]
  double cpu_util_machine = 0;  // busy fraction of the machine, in [0, 1]
  double mem_rss_bytes = 0, mem_available_bytes = 0;
  double gpu_util = 0, gpu_mem_used_bytes = 0, gpu_mem_total_bytes = 0, gpu_power_w = 0, gpu_sm_clock_mhz = 0;
  double net_tx_bytes_per_s = 0, net_rx_bytes_per_s = 0, net_retransmits_per_s = 0;
  double net_srtt_us = 0, net_cwnd = 0;  // bytes-weighted over flows active in the interval
  double interval_s = 0;                 // wall time the rates are taken over
};

class Monitor {
 public:
  // ebpf_mode (monitor.ebpf): auto (eBPF, else /proc, else none; logs why on stderr), on (eBPF or
  // throw dynamix::Error), off (/proc, else none). pids: processes whose flows count (empty = all).
  // gpu_index < 0 disables NVML.
  static std::unique_ptr<Monitor> create(EbpfMode ebpf_mode, std::vector<int> pids, int gpu_index);

  std::string source() const { return net_->source(); }                    // "ebpf" | "procfs" | "none"
  const std::string& fallback_reason() const { return fallback_reason_; }  // empty when eBPF in use
  std::string net_detail() const { return net_->detail(); }
  const std::string& gpu_reason() const { return gpu_.reason(); }  // empty when NVML works

  MonitorSample sample();
  const NetReading& last_net() const { return last_net_; }  // per-flow readout of the last sample()

  Monitor(std::unique_ptr<NetProbe> net, std::string fallback_reason, int gpu_index);

 private:
  std::unique_ptr<NetProbe> net_;
  std::string fallback_reason_;
  SysStats sys_;
  NvmlGpu gpu_;
  NetReading last_net_;
  double last_wall_s_ = 0;
};

}  // namespace dynamix
