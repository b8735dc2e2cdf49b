// DYNAMIX — freed host memory kept in the process for reuse; see host_memory.h.
#include "framework/core/host_memory.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#ifndef MADV_COLLAPSE
#define MADV_COLLAPSE 25  // Linux 6.1 (linux/mman.h); older kernels answer EINVAL
#endif

namespace dynamix {
namespace {

// The environment variable that already configures the allocator, or nullptr.
const char* allocator_set_by_environment() {
  const char* tunables = std::getenv("GLIBC_TUNABLES");
  if (tunables && std::strstr(tunables, "glibc.malloc.")) return "GLIBC_TUNABLES";
  for (const char* var :
       {"MALLOC_MMAP_MAX_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "MALLOC_TOP_PAD_"}) {
    if (std::getenv(var)) return var;
  }
  const char* preload = std::getenv("LD_PRELOAD");
  if (preload && std::strstr(preload, "malloc")) return "LD_PRELOAD";
  return nullptr;
}

constexpr uintptr_t kHugePage = uintptr_t{2} << 20;  // x86-64 and arm64 (4 KiB base pages)

// Where the main heap starts ([heap] in /proc/self/maps), or 0.
uintptr_t heap_start() {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  while (std::getline(maps, line)) {
    if (line.size() >= 6 && line.compare(line.size() - 6, 6, "[heap]") == 0) {
      return static_cast<uintptr_t>(std::stoull(line.substr(0, line.find('-')), nullptr, 16));
    }
  }
  return 0;
}

}  // namespace

std::string HeapHugePages::kernel_mode() {
  std::ifstream in("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string text;
  std::getline(in, text);  // e.g. "always [madvise] never": the bracketed one is in force
  const size_t open = text.find('['), close = text.find(']');
  return open == std::string::npos || close <= open ? "" : text.substr(open + 1, close - open - 1);
}

std::string HeapHugePages::describe() const {
  if (mode_ == "never") return "host memory: 4 KiB pages (the kernel's transparent_hugepage is never)";
  return "host memory: the heap in transparent huge pages (train.huge_pages; kernel mode " +
         (mode_.empty() ? std::string("unknown") : mode_) + ")";
}

size_t HeapHugePages::advise() {
  if (off_) return 0;
  const auto end = reinterpret_cast<uintptr_t>(sbrk(0));
  if (end < marked_end_ + kHugePage) return 0;
  if (marked_end_ == 0 && (marked_end_ = heap_start()) == 0) {
    off_ = true;  // no [heap]: glibc serves the main arena from mmap here
    return 0;
  }
  // Whole huge pages only: the kernel maps one where an aligned 2 MiB lies inside the marking.
  const uintptr_t lo = (marked_end_ + kHugePage - 1) & ~(kHugePage - 1);
  const uintptr_t hi = end & ~(kHugePage - 1);
  if (hi <= lo) return 0;
  auto* at = reinterpret_cast<void*>(lo);
  if (madvise(at, hi - lo, MADV_HUGEPAGE) != 0) {
    off_ = true;
    return 0;
  }
  (void)madvise(at, hi - lo, MADV_COLLAPSE);  // best effort: khugepaged otherwise
  marked_end_ = hi;
  return hi - lo;
}

KeptHostMemory keep_freed_host_memory() {
  if (const char* var = allocator_set_by_environment()) {
    return {false, std::string("host memory: the allocator as ") + var + " sets it"};
  }
#if defined(__GLIBC__)
  // mallopt(3): M_MMAP_MAX 0 serves every block from the heap; M_TRIM_THRESHOLD -1 never trims it.
  if (mallopt(M_MMAP_MAX, 0) == 1 && mallopt(M_TRIM_THRESHOLD, -1) == 1) {
    return {true,
            "host memory: freed blocks kept for reuse (glibc malloc without mmap or trimming; "
            "train.keep_host_memory)"};
  }
  return {false, "host memory: glibc refused mallopt; its defaults stay"};
#else
  return {false, "host memory: not glibc; the C library's allocator as it is"};
#endif
}

}  // namespace dynamix
