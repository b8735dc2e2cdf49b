// DYNAMIX — run_monitor: samples a Monitor every interval and prints flows busiest first.
#include "bpf/monitor_cli.h"

#include <signal.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <thread>

#include "bpf/monitor.h"
#include "framework/core/error.h"

namespace dynamix {

namespace {

void print_block(const Monitor& mon, const MonitorSample& s, int max_flows) {
  std::printf(
      "source=%s  interval=%.2fs  cpu(proc)=%.2f cores  cpu(machine)=%.1f%%  rss=%.1f MiB  avail=%.1f MiB\n",
      mon.source().c_str(), s.interval_s, s.cpu_util_process, 100.0 * s.cpu_util_machine,
      s.mem_rss_bytes / 1048576.0, s.mem_available_bytes / 1048576.0);
  if (mon.gpu_reason().empty()) {
    std::printf("gpu: util=%.0f%%  mem=%.0f/%.0f MiB  power=%.1f W  sm=%.0f MHz\n", 100.0 * s.gpu_util,
                s.gpu_mem_used_bytes / 1048576.0, s.gpu_mem_total_bytes / 1048576.0, s.gpu_power_w,
                s.gpu_sm_clock_mhz);
  } else {
    std::printf("gpu: %s\n", mon.gpu_reason().c_str());
  }
  std::printf("net: tx=%.1f KiB/s  rx=%.1f KiB/s  retrans=%.1f/s  srtt=%.0f us  cwnd=%.1f\n",
              s.net_tx_bytes_per_s / 1024.0, s.net_rx_bytes_per_s / 1024.0, s.net_retransmits_per_s,
              s.net_srtt_us, s.net_cwnd);

  std::vector<FlowStats> flows = mon.last_net().flows;
  std::sort(flows.begin(), flows.end(), [](const FlowStats& a, const FlowStats& b) {
    return a.d_tx_bytes + a.d_rx_bytes > b.d_tx_bytes + b.d_rx_bytes;
  });
  std::printf("%-50s %8s %12s %12s %9s %9s %6s\n", "flow (local -> remote)", "pid", "tx KiB/s", "rx KiB/s",
              "retrans/s", "srtt us", "cwnd");
  const double dt = s.interval_s > 0 ? s.interval_s : 1.0;
  int shown = 0;
  for (const FlowStats& f : flows) {
    if (shown == max_flows) break;
    if (f.d_tx_bytes + f.d_rx_bytes + f.d_retransmits == 0 && shown > 0) break;  // idle tail
    std::printf("%-50s %8d %12.1f %12.1f %9.1f %9u %6u\n", f.key.str().c_str(), f.pid,
                f.d_tx_bytes / 1024.0 / dt, f.d_rx_bytes / 1024.0 / dt, f.d_retransmits / dt, f.srtt_us,
                f.cwnd);
    ++shown;
  }
  if (flows.size() > size_t(shown)) std::printf("(%zu more flows idle or not shown)\n", flows.size() - shown);
  std::printf("\n");
  std::fflush(stdout);
}

}  // namespace

int run_monitor(const MonitorCliOptions& opts) {
  if (!(opts.interval_s > 0)) throw Error("monitor --interval: expected seconds > 0");
  if (opts.count < 0) throw Error("monitor --count: expected >= 0 (0 = forever)");
  // A process that is not there would only show an empty table, refresh after refresh.
  for (int pid : opts.pids) {
    if (pid <= 0 || (::kill(pid, 0) != 0 && errno == ESRCH))
      throw Error("monitor --pid " + std::to_string(pid) + ": no such process");
  }
  std::unique_ptr<Monitor> mon =
      Monitor::create(parse_choice<EbpfMode>(opts.ebpf, "monitor --ebpf"), opts.pids, opts.gpu_index);
  std::printf("dynamix monitor: network source %s (%s)%s%s\n\n", mon->source().c_str(),
              mon->net_detail().c_str(), mon->fallback_reason().empty() ? "" : "; ",
              mon->fallback_reason().c_str());
  for (int i = 0; opts.count == 0 || i < opts.count; ++i) {
    std::this_thread::sleep_for(std::chrono::duration<double>(opts.interval_s));
    print_block(*mon, mon->sample(), opts.max_flows);
  }
  return 0;
}

}  // namespace dynamix
