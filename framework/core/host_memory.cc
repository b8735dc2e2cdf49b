// DYNAMIX — freed host memory kept in the process for reuse; see host_memory.h.
#include "framework/core/host_memory.h"

#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
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

}  // namespace

std::string keep_freed_host_memory() {
  if (const char* var = allocator_set_by_environment()) {
    return std::string("host memory: the allocator as ") + var + " sets it";
  }
#if defined(__GLIBC__)
  // mallopt(3): M_MMAP_MAX 0 serves every block from the heap; M_TRIM_THRESHOLD -1 never trims it.
  if (mallopt(M_MMAP_MAX, 0) == 1 && mallopt(M_TRIM_THRESHOLD, -1) == 1) {
    return "host memory: freed blocks kept for reuse (glibc malloc without mmap or trimming; "
           "train.keep_host_memory)";
  }
  return "host memory: glibc refused mallopt; its defaults stay";
#else
  return "host memory: not glibc; the C library's allocator as it is";
#endif
}

}  // namespace dynamix
