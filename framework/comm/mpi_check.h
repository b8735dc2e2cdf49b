// DYNAMIX — the check macro for MPI calls, beside the code that makes them (framework/core links
// no MPI): on failure it throws dynamix::Error with the call text, MPI's error string, the rank
// and file:line, through the same throw_call_error as the CUDA and NCCL checks (cuda_check.h).
#pragma once

#include <string>

#include "framework/core/error.h"

namespace dynamix {
std::string mpi_error_string(int code);
}  // namespace dynamix

#define DYNAMIX_MPI_CHECK(call)                                                                         \
  do {                                                                                                  \
    int dynamix_mpi_rc_ = (call);                                                                       \
    if (dynamix_mpi_rc_ != 0) {                                                                         \
      ::dynamix::throw_call_error("MPI", #call, ::dynamix::mpi_error_string(dynamix_mpi_rc_), __FILE__, \
                                  __LINE__);                                                            \
    }                                                                                                   \
  } while (0)
