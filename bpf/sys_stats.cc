// DYNAMIX — SysStats: /proc/stat, /proc/self/statm, /proc/meminfo and the process CPU clock.
#include "bpf/sys_stats.h"

#include <time.h>
#include <unistd.h>

namespace dynamix {

namespace {

double clock_s(clockid_t id) {
  timespec ts{};
  clock_gettime(id, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

}  // namespace

SysStats::SysStats() : page_size_(double(sysconf(_SC_PAGESIZE))) {
  // The process CPU clock has ns resolution, unlike utime+stime in /proc/self/stat (ticks).
  prev_wall_s_ = clock_s(CLOCK_MONOTONIC);
  prev_cpu_s_ = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  read_machine(prev_busy_, prev_total_);
}

bool SysStats::read_machine(uint64_t& busy, uint64_t& total) {
  // First line: "cpu user nice system idle iowait irq softirq steal guest guest_nice" (ticks).
  std::string_view text = stat_.read();
  if (text.substr(0, 4) != "cpu ") return false;
  size_t pos = 4;
  uint64_t v[8] = {0};
  for (int i = 0; i < 8; ++i) {
    if (!next_u64(text, pos, v[i])) break;
  }
  total = 0;
  for (uint64_t x : v) total += x;  // guest time is already inside user/nice
  busy = total - v[3] - v[4];       // minus idle and iowait
  return true;
}

SysSample SysStats::sample() {
  SysSample s;
  const double wall = clock_s(CLOCK_MONOTONIC);
  const double cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID);
  if (wall > prev_wall_s_) s.cpu_util_process = (cpu - prev_cpu_s_) / (wall - prev_wall_s_);
  prev_wall_s_ = wall;
  prev_cpu_s_ = cpu;

  uint64_t busy = 0, total = 0;
  if (read_machine(busy, total)) {
    if (total > prev_total_ && busy >= prev_busy_) {
      s.cpu_util_machine = double(busy - prev_busy_) / double(total - prev_total_);
    }
    prev_busy_ = busy;
    prev_total_ = total;
  }

  std::string_view statm = statm_.read();  // "size resident shared ..." in pages
  size_t pos = 0;
  uint64_t size = 0, resident = 0;
  if (next_u64(statm, pos, size) && next_u64(statm, pos, resident)) s.mem_rss_bytes = resident * page_size_;

  const int64_t avail_kb = find_kv(meminfo_.read(), "MemAvailable");
  if (avail_kb >= 0) s.mem_available_bytes = double(avail_kb) * 1024.0;
  return s;
}

}  // namespace dynamix
