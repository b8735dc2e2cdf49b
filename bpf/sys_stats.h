// DYNAMIX — CPU utilization (this process, the machine) and memory, from /proc.
#pragma once

#include <cstdint>

#include "bpf/proc_file.h"

namespace dynamix {

struct SysSample {
  double cpu_util_process = 0;  // cores used by this process (1.0 = one full core)
  double cpu_util_machine = 0;  // busy fraction of all cores, in [0, 1]
  double mem_rss_bytes = 0;
  double mem_available_bytes = 0;
};

// Rates are taken between consecutive sample() calls (the first against construction time).
class SysStats {
 public:
  SysStats();
  SysSample sample();

 private:
  bool read_machine(uint64_t& busy, uint64_t& total);

  ProcFile stat_{"/proc/stat"};
  ProcFile statm_{"/proc/self/statm"};
  ProcFile meminfo_{"/proc/meminfo"};
  double page_size_;
  double prev_wall_s_ = 0, prev_cpu_s_ = 0;
  uint64_t prev_busy_ = 0, prev_total_ = 0;
};

}  // namespace dynamix
