// DYNAMIX — hlc CUDA, sender side: head statistics, union counters, support, sketch encode, and the
// small compaction / gather steps of the fallback rounds. CPU reference: kernels/hlc/sketch.cc and
// HlcCodec::allreduce_sum.
#include <thrust/iterator/counting_iterator.h>

#include <cub/block/block_reduce.cuh>
#include <cub/device/device_select.cuh>

#include "kernels/hlc/cuda/hlc_cuda.h"
#include "kernels/hlc/cuda/hlc_cuda_common.cuh"
#include "kernels/hlc/sketch.h"

namespace dynamix {
namespace hlc_cuda {
namespace {

struct MaxOp {
  __device__ unsigned long long operator()(unsigned long long a, unsigned long long b) const {
    return a > b ? a : b;
  }
};

__global__ void head_kernel(const float* data, size_t count, unsigned long long* head) {
  unsigned long long nnz = 0;
  uint32_t max_bits = 0;  // bits of a non-negative finite float order like the float
  for (size_t i = global_thread(); i < count; i += grid_threads()) {
    const float v = data[i];
    nnz += !(v == 0.0f);
    if (isfinite(v)) max_bits = max(max_bits, __float_as_uint(fabsf(v)));
  }
  using Reduce = cub::BlockReduce<unsigned long long, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
  const unsigned long long block_nnz = Reduce(storage).Sum(nnz);
  __syncthreads();
  const unsigned long long block_max =
      Reduce(storage).Reduce(static_cast<unsigned long long>(max_bits), MaxOp{});
  if (threadIdx.x == 0) {
    atomicAdd(&head[0], block_nnz);
    atomicMax(&head[1], block_max);
  }
}

// One warp per word: coalesced loads, then an OR across the warp (fields never overlap).
__global__ void pack_kernel(const float* data, size_t count, int bits, int per, size_t nwords,
                            int64_t* words) {
  const int lane = threadIdx.x & 31;
  const size_t nwarps = grid_threads() / 32;
  for (size_t w = global_thread() / 32; w < nwords; w += nwarps) {
    const size_t begin = w * per;
    uint64_t word = 0;
    for (int f = lane; f < per; f += 32) {
      const size_t i = begin + f;
      if (i < count && !(data[i] == 0.0f)) word |= uint64_t{1} << (f * bits);
    }
    for (int offset = 16; offset > 0; offset >>= 1) word |= __shfl_xor_sync(0xffffffffu, word, offset);
    if (lane == 0) words[w] = static_cast<int64_t>(word);
  }
}

struct FieldNonZero {
  const int64_t* words;
  uint32_t per;
  int bits;
  uint64_t mask;
  __device__ bool operator()(uint32_t i) const {
    const uint64_t word = static_cast<uint64_t>(words[i / per]);
    return ((word >> ((i % per) * bits)) & mask) != 0;
  }
};

__global__ void encode_kernel(const float* data, const uint32_t* support, size_t entries,
                              const uint32_t* cell, const uint8_t* negative, int scale,
                              unsigned long long* cells, int64_t* fixed, uint8_t* off_grid,
                              unsigned long long* off_grid_count) {
  for (size_t k = global_thread(); k < entries; k += grid_threads()) {
    const float v = data[support[k]];
    int64_t q = 0;
    uint8_t off = 0;
    if (!(v == 0.0f)) {  // NaN is non-zero, and off grid
      if (float_to_fixed(v, scale, &q)) {
        const uint8_t neg = negative[k];
        const uint64_t u = static_cast<uint64_t>(q);
        for (int h = 0; h < kHlcHashes; ++h) {
          atomicAdd(&cells[cell[k * kHlcHashes + h]], ((neg >> h) & 1) ? uint64_t{0} - u : u);
        }
      } else {
        q = 0;  // the CPU leaves this rank's fallback value at 0 for off-grid entries
        off = 1;
        atomicAdd(off_grid_count, 1ull);
      }
    }
    fixed[k] = q;
    off_grid[k] = off;
  }
}

struct FlagEquals {
  uint8_t match;
  __device__ bool operator()(uint8_t flag) const { return flag == match; }
};

template <typename In>
cudaError_t select_flagged(In in, const uint8_t* flags, uint8_t match, size_t n, uint32_t* out, uint32_t* num,
                           cudaStream_t stream) {
  size_t bytes = 0;
  HLC_CUDA_TRY(cub::DeviceSelect::FlaggedIf(nullptr, bytes, in, flags, out, num, static_cast<int64_t>(n),
                                            FlagEquals{match}, stream));
  Scratch temp(stream);
  HLC_CUDA_TRY(temp.allocate(bytes));
  HLC_CUDA_TRY(cub::DeviceSelect::FlaggedIf(temp.get(), bytes, in, flags, out, num, static_cast<int64_t>(n),
                                            FlagEquals{match}, stream));
  return cudaSuccess;
}

__global__ void mark_kernel(const uint32_t* support, size_t entries, const uint32_t* positions, size_t n,
                            uint8_t value, uint8_t* recovered) {
  for (size_t j = global_thread(); j < n; j += grid_threads()) {
    const uint32_t pos = positions[j];
    size_t lo = 0, hi = entries;  // lower_bound, as the codec does
    while (lo < hi) {
      const size_t mid = lo + (hi - lo) / 2;
      if (support[mid] < pos) {
        lo = mid + 1;
      } else {
        hi = mid;
      }
    }
    if (lo < entries && support[lo] == pos) recovered[lo] = value;
  }
}

template <typename T>
__global__ void gather_kernel(const T* src, const uint32_t* index, size_t n, T* dst) {
  for (size_t j = global_thread(); j < n; j += grid_threads()) dst[j] = src[index[j]];
}

template <typename T>
__global__ void scatter_kernel(const T* src, const uint32_t* index, size_t n, T* dst) {
  for (size_t j = global_thread(); j < n; j += grid_threads()) dst[index[j]] = src[j];
}

}  // namespace
}  // namespace hlc_cuda

using namespace hlc_cuda;

cudaError_t hlc_cuda_head(const float* data, size_t count, int64_t* head, cudaStream_t stream) {
  HLC_CUDA_TRY(cudaMemsetAsync(head, 0, 2 * sizeof(int64_t), stream));
  if (count == 0) return cudaSuccess;
  head_kernel<<<blocks_for(count), kThreads, 0, stream>>>(data, count,
                                                          reinterpret_cast<unsigned long long*>(head));
  HLC_CUDA_LAUNCHED();
  return cudaSuccess;
}

cudaError_t hlc_cuda_pack_nonzero(const float* data, size_t count, int ranks, int64_t* words,
                                  cudaStream_t stream) {
  if (ranks < 1) return cudaErrorInvalidValue;
  const int bits = union_field_bits(ranks);
  const int per = 63 / bits;
  const size_t nwords = union_words(count, ranks);
  if (nwords == 0) return cudaSuccess;
  pack_kernel<<<blocks_for(nwords * 32), kThreads, 0, stream>>>(data, count, bits, per, nwords, words);
  HLC_CUDA_LAUNCHED();
  return cudaSuccess;
}

cudaError_t hlc_cuda_unpack_support(const int64_t* words, size_t count, int ranks, uint32_t* support,
                                    uint32_t* num, cudaStream_t stream) {
  if (ranks < 1 || count > UINT32_MAX) return cudaErrorInvalidValue;
  if (count == 0) return cudaMemsetAsync(num, 0, sizeof(uint32_t), stream);
  const int bits = union_field_bits(ranks);
  const FieldNonZero pred{words, static_cast<uint32_t>(63 / bits), bits, (uint64_t{1} << bits) - 1};
  // A stable select of the positions keeps them sorted.
  const thrust::counting_iterator<uint32_t> positions(0);
  size_t bytes = 0;
  HLC_CUDA_TRY(cub::DeviceSelect::If(nullptr, bytes, positions, support, num, static_cast<int64_t>(count),
                                     pred, stream));
  Scratch temp(stream);
  HLC_CUDA_TRY(temp.allocate(bytes));
  HLC_CUDA_TRY(cub::DeviceSelect::If(temp.get(), bytes, positions, support, num, static_cast<int64_t>(count),
                                     pred, stream));
  return cudaSuccess;
}

cudaError_t hlc_cuda_encode(const float* data, const uint32_t* support, size_t entries, const uint32_t* cell,
                            const uint8_t* negative, int scale, int64_t* cells, int64_t* fixed,
                            uint8_t* off_grid, int64_t* off_grid_count, cudaStream_t stream) {
  if (entries == 0) return cudaSuccess;
  encode_kernel<<<blocks_for(entries), kThreads, 0, stream>>>(
      data, support, entries, cell, negative, scale, reinterpret_cast<unsigned long long*>(cells), fixed,
      off_grid, reinterpret_cast<unsigned long long*>(off_grid_count));
  HLC_CUDA_LAUNCHED();
  return cudaSuccess;
}

cudaError_t hlc_cuda_select(const uint8_t* flags, uint8_t match, size_t n, const uint32_t* map, uint32_t* out,
                            uint32_t* num, cudaStream_t stream) {
  if (n > UINT32_MAX) return cudaErrorInvalidValue;
  if (n == 0) return cudaMemsetAsync(num, 0, sizeof(uint32_t), stream);
  if (map) return select_flagged(map, flags, match, n, out, num, stream);
  return select_flagged(thrust::counting_iterator<uint32_t>(0), flags, match, n, out, num, stream);
}

cudaError_t hlc_cuda_mark_positions(const uint32_t* support, size_t entries, const uint32_t* positions,
                                    size_t n, uint8_t value, uint8_t* recovered, cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  mark_kernel<<<blocks_for(n), kThreads, 0, stream>>>(support, entries, positions, n, value, recovered);
  HLC_CUDA_LAUNCHED();
  return cudaSuccess;
}

cudaError_t hlc_cuda_gather(const int64_t* src, const uint32_t* index, size_t n, int64_t* dst,
                            cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  gather_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, index, n, dst);
  HLC_CUDA_LAUNCHED();
  return cudaSuccess;
}

cudaError_t hlc_cuda_gather(const float* src, const uint32_t* index, size_t n, float* dst,
                            cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  gather_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, index, n, dst);
  HLC_CUDA_LAUNCHED();
  return cudaSuccess;
}

cudaError_t hlc_cuda_scatter(const int64_t* src, const uint32_t* index, size_t n, int64_t* dst,
                             cudaStream_t stream) {
  if (n == 0) return cudaSuccess;
  scatter_kernel<<<blocks_for(n), kThreads, 0, stream>>>(src, index, n, dst);
  HLC_CUDA_LAUNCHED();
  return cudaSuccess;
}

}  // namespace dynamix
