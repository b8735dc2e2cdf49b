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

#include <string>

namespace dynamix {

// Applies the above unless the environment already configures the allocator (GLIBC_TUNABLES with
// glibc.malloc settings, MALLOC_*_ variables, or an allocator in LD_PRELOAD), which is left as set.
// Returns what it did, for the run's start line.
std::string keep_freed_host_memory();

}  // namespace dynamix
