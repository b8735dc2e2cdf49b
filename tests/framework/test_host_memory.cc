// DYNAMIX — host memory kept for reuse (framework/core/host_memory.h): after the set-up a large
// block comes from the heap, not from its own mmap, and freeing it gives nothing back to the
// kernel; a set-up the environment already made is left alone. glibc only; sanitizers replace
// malloc, so there is nothing to check under them.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
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
  const KeptHostMemory did = keep_freed_host_memory();
  EXPECT_TRUE(did.kept);
  EXPECT_NE(did.said.find("freed blocks kept for reuse"), std::string::npos) << did.said;
  EXPECT_LT(mapped_bytes_while_holding_a_block(), kBlock);
  // Freed, the block stays in the heap (no trim): the heap is still at least that large.
  EXPECT_GE(mallinfo2().arena, kBlock);
}

TEST(HostMemory, AnAllocatorSetUpByTheEnvironmentIsLeftAlone) {
  setenv("MALLOC_TRIM_THRESHOLD_", "131072", 1);
  const KeptHostMemory did = keep_freed_host_memory();
  EXPECT_FALSE(did.kept);
  EXPECT_NE(did.said.find("as MALLOC_TRIM_THRESHOLD_ sets it"), std::string::npos) << did.said;
  EXPECT_GE(mapped_bytes_while_holding_a_block(), kBlock);
}

// smaps' THPeligible for the mapping that holds `p`: 1 where a fault may map a huge page there.
int thp_eligible(const void* p) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    const size_t dash = line.find('-');
    if (dash != std::string::npos && dash < 17 && line.find(' ') > dash) {  // a mapping's first line
      const auto lo = std::stoull(line.substr(0, dash), nullptr, 16);
      const auto hi = std::stoull(line.substr(dash + 1, line.find(' ') - dash - 1), nullptr, 16);
      inside = lo <= at && at < hi;
    } else if (inside && line.rfind("THPeligible:", 0) == 0) {
      return std::stoi(line.substr(12));
    }
  }
  return -1;
}

TEST(HostMemory, HugePagesMarkTheHeapAsItGrows) {
  if (HeapHugePages::kernel_mode() == "never" || HeapHugePages::kernel_mode().empty()) {
    GTEST_SKIP() << "the kernel's transparent_hugepage is '" << HeapHugePages::kernel_mode() << "'";
  }
  unsetenv("GLIBC_TUNABLES");
  ASSERT_TRUE(keep_freed_host_memory().kept);
  HeapHugePages huge;
  huge.advise();  // the heap so far
  void* p = std::malloc(kBlock);
  ASSERT_NE(p, nullptr);
  const char* middle = static_cast<char*>(p) + kBlock / 2;
  EXPECT_EQ(thp_eligible(middle), HeapHugePages::kernel_mode() == "always" ? 1 : 0);
  EXPECT_GE(huge.advise(), kBlock - (size_t{4} << 20));  // the block, less a huge page at each end
  EXPECT_EQ(thp_eligible(middle), 1);
  EXPECT_EQ(huge.advise(), 0u);  // not grown since
  std::free(p);
}

// Mode "never" means 4 KiB pages, as the start line says: MADV_COLLAPSE would ignore the setting
// (madvise(2)), so advise() must not mark or collapse anything there.
TEST(HostMemory, HugePagesLeaveTheHeapAloneInModeNever) {
  if (HeapHugePages::kernel_mode() == "always") GTEST_SKIP() << "every mapping is eligible in mode 'always'";
  unsetenv("GLIBC_TUNABLES");
  ASSERT_TRUE(keep_freed_host_memory().kept);
  HeapHugePages huge("never");
  void* p = std::malloc(kBlock);
  ASSERT_NE(p, nullptr);
  const char* middle = static_cast<char*>(p) + kBlock / 2;
  EXPECT_EQ(huge.advise(), 0u);
  EXPECT_NE(thp_eligible(middle), 1);
  std::free(p);
}

#else

TEST(HostMemory, NeedsGlibcMallocUnsanitized) { GTEST_SKIP() << "glibc's own malloc only"; }

#endif

}  // namespace
}  // namespace dynamix
