// DYNAMIX — `dynamix monitor`: a live table of the watched TCP flows and the system line.
#pragma once

#include <string>
#include <vector>

namespace dynamix {

struct MonitorCliOptions {
  std::string ebpf = "auto";  // auto | on | off
  double interval_s = 1.0;    // seconds between refreshes
  int count = 0;              // refreshes to print, 0 = until interrupted
  std::vector<int> pids;      // processes to watch, empty = all
  int gpu_index = 0;          // NVML device, < 0 = none
  int max_flows = 20;         // rows shown per refresh, busiest first
};

// Prints one block per interval to stdout; returns the process exit code (throws
// dynamix::Error for bad options or `--ebpf on` without eBPF).
int run_monitor(const MonitorCliOptions& opts);

}  // namespace dynamix
