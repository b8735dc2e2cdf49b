// DYNAMIX tests — LeakSanitizer in multi-rank tests (scripts/test-sanitizers.sh). Open MPI 4.1
// leaks by design in MPI_Init (often from components it loads and dlcloses again, so LSan cannot
// name them for a suppression) and in MPI_Finalize. So: allocations this thread makes inside
// MPI_Init are not reported, and the leak check runs before MPI_Finalize, not at exit.
// Without AddressSanitizer both are no-ops.
#pragma once

#include "tests/asan_build.h"  // LeakSanitizer comes with ASan's malloc

#ifdef DYNAMIX_ASAN
#include <sanitizer/lsan_interface.h>
#endif

namespace dynamix::test {

// Allocations made on this thread while an object of this type is alive are never reported.
class IgnoreLeaksOfMpiInit {
 public:
#ifdef DYNAMIX_ASAN
  IgnoreLeaksOfMpiInit() { __lsan_disable(); }
  ~IgnoreLeaksOfMpiInit() { __lsan_enable(); }
#else
  IgnoreLeaksOfMpiInit() {}  // user-provided: no unused-variable warning at the call sites
#endif
  IgnoreLeaksOfMpiInit(const IgnoreLeaksOfMpiInit&) = delete;
  IgnoreLeaksOfMpiInit& operator=(const IgnoreLeaksOfMpiInit&) = delete;
};

// The end-of-process leak check, now (call before MPI_Finalize); exits non-zero on a leak.
inline void check_leaks_before_mpi_finalize() {
#ifdef DYNAMIX_ASAN
  __lsan_do_leak_check();
#endif
}

}  // namespace dynamix::test
