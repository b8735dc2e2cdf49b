// DYNAMIX — CUDA bucket pack/scale/unpack and squared norms (see bucket_pack_cuda.h).
//
// One launch per bucket. The segments, taken back to back in table order, form one element space
// of elements() entries (DeviceSegment::start is each segment's place in it). Blocks take tiles
// of that space in a grid-stride loop; a block finds the first segment of its tile by binary
// search and walks the (few) segments the tile touches, its threads taking consecutive elements.
// So the work is balanced and coalesced whatever the segment sizes, and per-element cost does not
// grow with the number of segments. Norms: per-thread double sums, a block reduction, one
// atomicAdd(double) per block.
#include <cuda_runtime.h>

#include <algorithm>
#include <utility>

#include "kernels/cuda/bucket_pack_cuda.h"

namespace dynamix::kernels::gpu {
namespace {

constexpr int kThreads = 256;
constexpr int kWarps = kThreads / 32;
constexpr int kBlocksPerSm = 8;     // 8 x 256 threads fill an SM (2048 resident threads on sm_90)
constexpr int kItemsPerThread = 8;  // elements per thread in one tile

// Blocks for `n` elements: one per tile, at most one resident wave (the rest loop).
cudaError_t grid_for(size_t n, int* blocks) {
  int device = 0, sms = 0;
  cudaError_t e = cudaGetDevice(&device);
  if (e != cudaSuccess) return e;
  e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  if (e != cudaSuccess) return e;
  const size_t per_block = static_cast<size_t>(kThreads) * kItemsPerThread;
  const size_t want = (n + per_block - 1) / per_block;
  const size_t cap = static_cast<size_t>(std::max(sms, 1)) * kBlocksPerSm;
  *blocks = static_cast<int>(std::max<size_t>(1, std::min(want, cap)));
  return cudaSuccess;
}

// Sum over the block; the result is valid in thread 0.
__device__ double block_sum(double v) {
  __shared__ double warp_sums[kWarps];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < kWarps ? warp_sums[lane] : 0.0;
    for (int o = 16; o > 0; o >>= 1) v += __shfl_down_sync(0xffffffffu, v, o);
  }
  return v;
}

__device__ void add_block_sum(double acc, double* out) {
  acc = block_sum(acc);
  if (threadIdx.x == 0 && acc != 0.0) atomicAdd(out, acc);
}

// Calls f(segment, j_begin, j_end) for every piece of a segment inside one of this block's tiles;
// f runs its threads over [j_begin, j_end) with stride blockDim.x.
template <typename T, typename F>
__device__ void for_each_piece(const DeviceSegment<T>* segments, size_t n_segments, size_t total, F f) {
  const size_t tile = static_cast<size_t>(kThreads) * kItemsPerThread;
  for (size_t t0 = static_cast<size_t>(blockIdx.x) * tile; t0 < total;
       t0 += static_cast<size_t>(gridDim.x) * tile) {
    const size_t t1 = t0 + tile < total ? t0 + tile : total;
    // Last segment starting at or before t0 (same address in every thread: broadcast loads).
    size_t lo = 0, hi = n_segments;
    while (hi - lo > 1) {
      const size_t mid = lo + (hi - lo) / 2;
      if (segments[mid].start <= t0) {
        lo = mid;
      } else {
        hi = mid;
      }
    }
    for (size_t k = lo; k < n_segments; ++k) {
      const DeviceSegment<T> s = segments[k];
      if (s.start >= t1) break;
      const size_t begin = s.start > t0 ? s.start : t0;
      const size_t end = s.start + s.count < t1 ? s.start + s.count : t1;
      if (begin < end) f(s, begin - s.start, end - s.start);
    }
  }
}

template <typename T, bool kNorm>
__global__ void __launch_bounds__(kThreads) pack_kernel(const DeviceSegment<T>* segments, size_t n_segments,
                                                        size_t total, T scale, T* bucket, double* sq_norm) {
  double acc = 0.0;
  for_each_piece(segments, n_segments, total, [&](const DeviceSegment<T>& s, size_t j0, size_t j1) {
    T* out = bucket + s.offset;
    if (s.data == nullptr) {
      for (size_t j = j0 + threadIdx.x; j < j1; j += blockDim.x) out[j] = T(0);
      return;
    }
    const T* in = s.data;
    for (size_t j = j0 + threadIdx.x; j < j1; j += blockDim.x) {
      const T x = in[j];
      out[j] = scale * x;  // one rounding, as on the CPU: bit-identical buckets
      if (kNorm) acc += static_cast<double>(x) * static_cast<double>(x);
    }
  });
  if (kNorm) add_block_sum(acc, sq_norm);
}

template <typename T, bool kNorm>
__global__ void __launch_bounds__(kThreads) unpack_kernel(const T* bucket, const DeviceSegment<T>* segments,
                                                          size_t n_segments, size_t total, double* sq_norm) {
  double acc = 0.0;
  for_each_piece(segments, n_segments, total, [&](const DeviceSegment<T>& s, size_t j0, size_t j1) {
    const T* in = bucket + s.offset;
    T* out = s.data;
    for (size_t j = j0 + threadIdx.x; j < j1; j += blockDim.x) {
      const T x = in[j];
      if (out != nullptr) out[j] = x;
      if (kNorm) acc += static_cast<double>(x) * static_cast<double>(x);
    }
  });
  if (kNorm) add_block_sum(acc, sq_norm);
}

template <typename T>
__global__ void __launch_bounds__(kThreads)
    squared_norm_kernel(const T* data, size_t count, double* sq_norm) {
  const size_t stride = static_cast<size_t>(gridDim.x) * blockDim.x;
  double acc = 0.0;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < count; i += stride) {
    const double x = static_cast<double>(data[i]);
    acc += x * x;
  }
  add_block_sum(acc, sq_norm);
}

}  // namespace

template <typename T>
DeviceSegments<T>::~DeviceSegments() {
  if (device_ != nullptr) cudaFree(device_);  // error ignored: may run after the runtime unloads
}

template <typename T>
DeviceSegments<T>::DeviceSegments(DeviceSegments&& other) noexcept {
  *this = std::move(other);
}

template <typename T>
DeviceSegments<T>& DeviceSegments<T>::operator=(DeviceSegments&& other) noexcept {
  std::swap(device_, other.device_);
  std::swap(capacity_, other.capacity_);
  std::swap(size_, other.size_);
  std::swap(elements_, other.elements_);
  std::swap(host_, other.host_);
  return *this;
}

template <typename T>
cudaError_t DeviceSegments<T>::upload(const std::vector<Segment<T>>& segments, cudaStream_t stream) {
  size_ = 0;
  elements_ = 0;
  host_.clear();
  size_t elements = 0;
  for (const auto& s : segments) {
    host_.push_back(DeviceSegment<T>{s.data, s.count, s.offset, elements});
    elements += s.count;
  }
  if (host_.size() > capacity_) {
    if (device_ != nullptr) {
      const cudaError_t e = cudaFree(device_);
      device_ = nullptr;
      capacity_ = 0;
      if (e != cudaSuccess) return e;
    }
    void* p = nullptr;
    const cudaError_t e = cudaMalloc(&p, host_.size() * sizeof(DeviceSegment<T>));
    if (e != cudaSuccess) return e;
    device_ = static_cast<DeviceSegment<T>*>(p);
    capacity_ = host_.size();
  }
  if (host_.empty()) return cudaSuccess;
  // From pageable memory the call returns once host_ has been staged; host_ stays alive anyway.
  const cudaError_t e = cudaMemcpyAsync(device_, host_.data(), host_.size() * sizeof(DeviceSegment<T>),
                                        cudaMemcpyHostToDevice, stream);
  if (e != cudaSuccess) return e;
  size_ = host_.size();
  elements_ = elements;
  return cudaSuccess;
}

template <typename T>
cudaError_t pack_scale(const DeviceSegments<T>& segments, T scale, T* bucket, double* sq_norm,
                       cudaStream_t stream) {
  if (segments.elements() == 0) return cudaSuccess;
  int blocks = 0;
  if (const cudaError_t e = grid_for(segments.elements(), &blocks); e != cudaSuccess) return e;
  if (sq_norm != nullptr) {
    pack_kernel<T, true><<<blocks, kThreads, 0, stream>>>(segments.device(), segments.size(),
                                                          segments.elements(), scale, bucket, sq_norm);
  } else {
    pack_kernel<T, false><<<blocks, kThreads, 0, stream>>>(segments.device(), segments.size(),
                                                           segments.elements(), scale, bucket, nullptr);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t unpack(const T* bucket, const DeviceSegments<T>& segments, double* sq_norm, cudaStream_t stream) {
  if (segments.elements() == 0) return cudaSuccess;
  int blocks = 0;
  if (const cudaError_t e = grid_for(segments.elements(), &blocks); e != cudaSuccess) return e;
  if (sq_norm != nullptr) {
    unpack_kernel<T, true><<<blocks, kThreads, 0, stream>>>(bucket, segments.device(), segments.size(),
                                                            segments.elements(), sq_norm);
  } else {
    unpack_kernel<T, false><<<blocks, kThreads, 0, stream>>>(bucket, segments.device(), segments.size(),
                                                             segments.elements(), nullptr);
  }
  return cudaGetLastError();
}

template <typename T>
cudaError_t squared_norm(const T* data, size_t count, double* sq_norm, cudaStream_t stream) {
  if (count == 0) return cudaSuccess;
  int blocks = 0;
  if (const cudaError_t e = grid_for(count, &blocks); e != cudaSuccess) return e;
  squared_norm_kernel<T><<<blocks, kThreads, 0, stream>>>(data, count, sq_norm);
  return cudaGetLastError();
}

template class DeviceSegments<float>;
template class DeviceSegments<double>;
template cudaError_t pack_scale<float>(const DeviceSegments<float>&, float, float*, double*, cudaStream_t);
template cudaError_t pack_scale<double>(const DeviceSegments<double>&, double, double*, double*,
                                        cudaStream_t);
template cudaError_t unpack<float>(const float*, const DeviceSegments<float>&, double*, cudaStream_t);
template cudaError_t unpack<double>(const double*, const DeviceSegments<double>&, double*, cudaStream_t);
template cudaError_t squared_norm<float>(const float*, size_t, double*, cudaStream_t);
template cudaError_t squared_norm<double>(const double*, size_t, double*, cudaStream_t);

}  // namespace dynamix::kernels::gpu
