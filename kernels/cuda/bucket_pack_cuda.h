// DYNAMIX — CUDA bucket pack/scale/unpack and squared norms; mirrors kernels/cpu/bucket_pack.cc.
// Every function is asynchronous on `stream` and returns the launch status (cudaSuccess or the
// error); errors of the kernel itself surface at the next synchronizing call.
// Norm outputs are device doubles that are ACCUMULATED into (zero them first, e.g. with
// cudaMemsetAsync), so several buckets can add into one total; pass null to skip the norm.
#pragma once

// Only the C type declarations (cudaError_t, cudaStream_t); the include path comes with
// CUDA::cudart, which dynamix_kernels_cuda links publicly.
#include <driver_types.h>

#include <cstddef>
#include <vector>

#include "kernels/bucket_pack.h"

namespace dynamix::kernels::gpu {

// (Namespace gpu, not cuda: a nested `cuda` would hide libcu++'s ::cuda inside dynamix::kernels.)

// One segment as the kernels read it.
template <typename T>
struct DeviceSegment {
  T* data;
  size_t count;
  size_t offset;  // in the bucket
  size_t start;   // sum of the counts before it in the table (the kernels' work index)
};

// Owns the device copy of one bucket layout. Upload once per layout, reuse every step.
template <typename T>
class DeviceSegments {
 public:
  DeviceSegments() = default;
  ~DeviceSegments();
  DeviceSegments(DeviceSegments&& other) noexcept;
  DeviceSegments& operator=(DeviceSegments&& other) noexcept;
  DeviceSegments(const DeviceSegments&) = delete;
  DeviceSegments& operator=(const DeviceSegments&) = delete;

  // Copies the layout to the current device, ordered on `stream`. The data pointers must be
  // device memory (or null: packed as zeros, skipped by unpack). Reallocates only when it grows
  // (cudaFree then synchronizes the device, so in-flight kernels never see freed memory).
  cudaError_t upload(const std::vector<Segment<T>>& segments, cudaStream_t stream);

  size_t size() const { return size_; }          // segments
  size_t elements() const { return elements_; }  // sum of counts
  const DeviceSegment<T>* device() const { return device_; }

 private:
  DeviceSegment<T>* device_ = nullptr;
  size_t capacity_ = 0;
  size_t size_ = 0;
  size_t elements_ = 0;
  std::vector<DeviceSegment<T>> host_;  // source of the last upload, kept alive past the copy
};

// bucket[off_k + j] = scale * src_k[j] (zeros for null segments), in one launch for the bucket;
// *sq_norm += sum of src_k[j]^2 (unscaled, in double).
template <typename T>
cudaError_t pack_scale(const DeviceSegments<T>& segments, T scale, T* bucket, double* sq_norm,
                       cudaStream_t stream);

// dst_k[j] = bucket[off_k + j] (null segments skipped), in one launch;
// *sq_norm += sum of the bucket's squares over all segments (in double).
template <typename T>
cudaError_t unpack(const T* bucket, const DeviceSegments<T>& segments, double* sq_norm, cudaStream_t stream);

// *sq_norm += sum_i data[i]^2 (in double), e.g. a flat gradient for the noise-scale statistics.
template <typename T>
cudaError_t squared_norm(const T* data, size_t count, double* sq_norm, cudaStream_t stream);

extern template class DeviceSegments<float>;
extern template class DeviceSegments<double>;
extern template cudaError_t pack_scale<float>(const DeviceSegments<float>&, float, float*, double*,
                                              cudaStream_t);
extern template cudaError_t pack_scale<double>(const DeviceSegments<double>&, double, double*, double*,
                                               cudaStream_t);
extern template cudaError_t unpack<float>(const float*, const DeviceSegments<float>&, double*, cudaStream_t);
extern template cudaError_t unpack<double>(const double*, const DeviceSegments<double>&, double*,
                                           cudaStream_t);
extern template cudaError_t squared_norm<float>(const float*, size_t, double*, cudaStream_t);
extern template cudaError_t squared_norm<double>(const double*, size_t, double*, cudaStream_t);

}  // namespace dynamix::kernels::gpu
