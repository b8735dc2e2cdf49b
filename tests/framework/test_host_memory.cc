// DYNAMIX — host memory kept for reuse (framework/core/host_memory.h): after the set-up a large
// block comes from the heap, not from its own mmap, and freeing it gives nothing back to the
// kernel; a set-up the environment already made is left alone. glibc only; sanitizers replace
// malloc, so there is nothing to check under them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "framework/core/host_memory.h"
#include "tests/asan_build.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace dynamix {
namespace {

#if defined(__GLIBC__) && !defined(DYNAMIX_ASAN)

constexpr size_t kBlock = size_t{64} << 20;  // above glibc's largest dynamic mmap threshold (32 MiB)

// Bytes glibc holds in blocks mapped on their own, while a block of kBlock is alive.
size_t mapped_bytes_while_holding_a_block() {
  void* p = std::malloc(kBlock);
  EXPECT_NE(p, nullptr);
  static_cast<volatile char*>(p)[0] = 1;
  const size_t mapped = mallinfo2().hblkhd;
  std::free(p);
  return mapped;
}

// Each test runs in a process of its own (EACH_TEST_ALONE in tests/framework/CMakeLists.txt):
// mallopt is for the process.
TEST(HostMemory, GlibcDefaultsMapALargeBlockOnItsOwn) {
  EXPECT_GE(mapped_bytes_while_holding_a_block(), kBlock);
}

TEST(HostMemory, KeptMemoryServesALargeBlockFromTheHeapAndKeepsItWhenFreed) {
  unsetenv("GLIBC_TUNABLES");
  const std::string said = keep_freed_host_memory();
  EXPECT_NE(said.find("freed blocks kept for reuse"), std::string::npos) << said;
  EXPECT_LT(mapped_bytes_while_holding_a_block(), kBlock);
  // Freed, the block stays in the heap (no trim): the heap is still at least that large.
  EXPECT_GE(mallinfo2().arena, kBlock);
}

TEST(HostMemory, AnAllocatorSetUpByTheEnvironmentIsLeftAlone) {
  setenv("MALLOC_TRIM_THRESHOLD_", "131072", 1);
  const std::string said = keep_freed_host_memory();
  EXPECT_NE(said.find("as MALLOC_TRIM_THRESHOLD_ sets it"), std::string::npos) << said;
  EXPECT_GE(mapped_bytes_while_holding_a_block(), kBlock);
}

#else

TEST(HostMemory, NeedsGlibcMallocUnsanitized) { GTEST_SKIP() << "glibc's own malloc only"; }

#endif

}  // namespace
}  // namespace dynamix
