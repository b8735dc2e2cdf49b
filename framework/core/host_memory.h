// DYNAMIX — freed host memory kept in the process for reuse (train.keep_host_memory).
//
// glibc's malloc serves each block above a threshold (128 KiB at start, rising with use to at
// most 32 MiB) with its own mmap and unmaps it when freed, and hands the heap's free top back to
// the kernel. A CPU training step allocates and frees the same activation and gradient blocks
// every step, so blocks above the threshold come back as fresh pages each time, and the page
// faults that zero them took most of the step once a rank's batch passed about 150 samples of the
// Fashion-MNIST CNN (2-core VM, 2026-11-29: 340 us per sample at 32-100 samples, 1,000-1,300 at 200,
// 1,800-3,300 at 400; 340 at every size with memory kept; docs/RESULTS.md §4). The threshold's
// rise also made a rank's speed change by itself within a run. CUDA's caching allocator keeps
// device memory the same way; this is its counterpart for host memory: no mmap for large blocks,
// no trimming, so the process keeps its peak heap until it exits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

namespace dynamix {

// Applies the above unless the environment already configures the allocator (GLIBC_TUNABLES with
// glibc.malloc settings, MALLOC_*_ variables, or an allocator in LD_PRELOAD), which is left as set.
struct KeptHostMemory {
  bool kept = false;  // glibc's malloc now keeps freed blocks (not left to the environment)
  std::string said;   // what was done, for the run's start line
};
KeptHostMemory keep_freed_host_memory();

// The kept heap in transparent huge pages (train.huge_pages). With memory kept, a step's blocks,
// the dataset and the model live in glibc's main heap; in 4 KiB pages, a step touches thousands of
// them and misses the TLB on many. glibc asks for huge pages itself only when GLIBC_TUNABLES says
// glibc.malloc.hugetlb=1 at process start; this does it from inside the process: each advise()
// marks the heap grown since the last one (madvise MADV_HUGEPAGE), so its new pages fault in as
// 2 MiB pages, and collapses the pages already there (MADV_COLLAPSE, Linux 6.1+; on older kernels
// khugepaged collapses them in the background). Nothing happens where the kernel's
// transparent_hugepage mode is "never": MADV_COLLAPSE ignores that setting (madvise(2)), so the
// heap is not touched at all there. On the 2-core VM, runs took 0.95-0.97x their time in
// 4 KiB pages (the README demo 0.953x; docs/RESULTS.md §4).
class HeapHugePages {
 public:
  // `mode` is the kernel's transparent_hugepage mode, read here unless a test names one.
  explicit HeapHugePages(std::string mode = kernel_mode()) : mode_(std::move(mode)), off_(mode_ == "never") {}
  // The kernel's transparent_hugepage mode ("always", "madvise" or "never"); "" where unknown.
  static std::string kernel_mode();
  // For the run's start line: what advise() will do, by the mode this was built with.
  std::string describe() const;
  // Marks and collapses the heap grown since the last call; cheap when it has not grown by a huge
  // page (one sbrk(0)). Returns the bytes marked by this call.
  size_t advise();

 private:
  std::string mode_;
  uintptr_t marked_end_ = 0;
  bool off_;  // the kernel's mode is "never", or madvise refused MADV_HUGEPAGE (no THP): do nothing
};

}  // namespace dynamix
