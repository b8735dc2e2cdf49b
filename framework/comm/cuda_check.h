// DYNAMIX — check macros for CUDA runtime and NCCL calls, like DYNAMIX_MPI_CHECK: on failure they
// throw dynamix::Error with the call text, the library's error name and string, the rank and
// file:line. Include only where CUDA and NCCL headers are available (targets linking dynamix_nccl).
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

#include "framework/core/error.h"

namespace dynamix {

// "cudaErrorNoDevice: no CUDA-capable device is detected"
inline std::string cuda_error_string(cudaError_t code) {
  return std::string(cudaGetErrorName(code)) + ": " + cudaGetErrorString(code);
}

// NCCL's generic string, plus the communicator's last message (the specific cause) when known.
inline std::string nccl_error_string(ncclResult_t code, ncclComm_t comm = nullptr) {
  std::string s = std::string(ncclGetErrorString(code)) + " (ncclResult_t " + std::to_string(code) + ")";
  const char* last = ncclGetLastError(comm);
  if (last != nullptr && last[0] != '\0') s += "; last NCCL error: " + std::string(last);
  return s;
}

}  // namespace dynamix

#define DYNAMIX_CUDA_CHECK(call)                                                                           \
  do {                                                                                                     \
    const cudaError_t dynamix_cuda_rc_ = (call);                                                           \
    if (dynamix_cuda_rc_ != cudaSuccess) {                                                                 \
      ::dynamix::throw_call_error("CUDA", #call, ::dynamix::cuda_error_string(dynamix_cuda_rc_), __FILE__, \
                                  __LINE__);                                                               \
    }                                                                                                      \
  } while (0)

#define DYNAMIX_NCCL_CHECK(call) DYNAMIX_NCCL_CHECK_COMM(call, nullptr)

// With the communicator at hand, so the message carries ncclGetLastError(comm).
#define DYNAMIX_NCCL_CHECK_COMM(call, comm)                                                            \
  do {                                                                                                 \
    const ncclResult_t dynamix_nccl_rc_ = (call);                                                      \
    if (dynamix_nccl_rc_ != ncclSuccess) {                                                             \
      ::dynamix::throw_call_error("NCCL", #call, ::dynamix::nccl_error_string(dynamix_nccl_rc_, comm), \
                                  __FILE__, __LINE__);                                                 \
    }                                                                                                  \
  } while (0)

namespace dynamix {

// Makes `device` current for the calling thread (a comm or watchdog thread may have another one,
// or none yet) and restores the previous device afterwards.
class CudaDeviceGuard {
 public:
  explicit CudaDeviceGuard(int device) {
    DYNAMIX_CUDA_CHECK(cudaGetDevice(&previous_));
    if (previous_ == device) {
      previous_ = -1;
    } else {
      DYNAMIX_CUDA_CHECK(cudaSetDevice(device));
    }
  }
  ~CudaDeviceGuard() {
    if (previous_ >= 0) cudaSetDevice(previous_);
  }
  CudaDeviceGuard(const CudaDeviceGuard&) = delete;
  CudaDeviceGuard& operator=(const CudaDeviceGuard&) = delete;

 private:
  int previous_ = -1;
};

}  // namespace dynamix
