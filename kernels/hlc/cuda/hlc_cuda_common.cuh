// DYNAMIX — shared pieces of the hlc CUDA kernels: launch shapes, error propagation, stream-ordered
// scratch, and device copies of the CPU fixed-point conversions (kernels/hlc/fixed_point.cc).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>

namespace dynamix {
namespace hlc_cuda {

constexpr int kThreads = 256;
constexpr size_t kMaxBlocks = 65535;  // grid-stride loops cover the rest

inline unsigned blocks_for(size_t n) {
  return static_cast<unsigned>(std::max<size_t>(1, std::min(kMaxBlocks, (n + kThreads - 1) / kThreads)));
}

// Returns the first failing call's error from the enclosing function.
#define HLC_CUDA_TRY(call)                        \
  do {                                            \
    const cudaError_t hlc_err_ = (call);          \
    if (hlc_err_ != cudaSuccess) return hlc_err_; \
  } while (0)

// Launch errors (bad configuration, no device) surface here; execution errors at the next sync.
#define HLC_CUDA_LAUNCHED() HLC_CUDA_TRY(cudaGetLastError())

// Stream-ordered scratch, freed on every return path.
class Scratch {
 public:
  explicit Scratch(cudaStream_t stream) : stream_(stream) {}
  ~Scratch() {
    if (ptr_) cudaFreeAsync(ptr_, stream_);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  cudaError_t allocate(size_t bytes) { return cudaMallocAsync(&ptr_, std::max<size_t>(bytes, 1), stream_); }
  void* get() const { return ptr_; }

 private:
  cudaStream_t stream_;
  void* ptr_ = nullptr;
};

__device__ __forceinline__ size_t global_thread() {
  return static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ __forceinline__ size_t grid_threads() { return static_cast<size_t>(gridDim.x) * blockDim.x; }

// Line for line float_to_fixed(): ldexp, fabs and trunc are exact IEEE operations on the device as
// on the host (no fast math), so the same values qualify and give the same integers.
__device__ __forceinline__ bool float_to_fixed(float value, int scale, int64_t* fixed) {
  if (!isfinite(value)) return false;
  const double scaled = ldexp(static_cast<double>(value), scale);
  if (!(fabs(scaled) < 9.2e18)) return false;
  const double whole = trunc(scaled);
  if (whole != scaled || (whole == 0.0 && value != 0.0f)) return false;
  *fixed = static_cast<int64_t>(whole);
  return true;
}

// Line for line fixed_to_float(): one round-to-nearest-even uint64 -> float conversion, then an exact
// power-of-two scaling; subnormal results are rounded in integers and built from their bits.
__device__ __forceinline__ float fixed_to_float(int64_t fixed, int scale) {
  if (fixed == 0) return 0.0f;
  const bool negative = fixed < 0;
  const uint64_t mag = negative ? uint64_t{0} - static_cast<uint64_t>(fixed) : static_cast<uint64_t>(fixed);
  const int sub_shift = scale - 149;
  const bool normal = scale - 126 < 0 || (scale - 126 < 64 && mag >= (uint64_t{1} << (scale - 126)));
  float out;
  if (normal || sub_shift <= 0) {
    out = ldexpf(__ull2float_rn(mag), -scale);
  } else if (sub_shift >= 64) {
    out = 0.0f;
  } else {
    const uint64_t kept = mag >> sub_shift;
    const uint64_t rest = mag & ((uint64_t{1} << sub_shift) - 1);
    const uint64_t half = uint64_t{1} << (sub_shift - 1);
    const uint64_t rounded = kept + ((rest > half || (rest == half && (kept & 1))) ? 1 : 0);
    out = __uint_as_float(static_cast<uint32_t>(rounded));  // rounded <= 2^23: bits of rounded * 2^-149
  }
  return negative ? -out : out;
}

}  // namespace hlc_cuda
}  // namespace dynamix
