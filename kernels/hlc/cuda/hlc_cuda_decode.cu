// DYNAMIX — hlc CUDA, receiver side: parallel peeling of the summed sketch and the final dequantize.
// CPU reference: peel() in kernels/hlc/sketch.cc and the scatter at the end of HlcCodec::allreduce_sum.
//
// Peeling removes entries that sit alone in some cell until no cell holds exactly one unrecovered
// entry; the entries left are the 2-core of the cell hypergraph, which does not depend on the order
// of removal, and cells are exact integers mod 2^64, so the recovered set, the sums and the leftover
// cells equal the CPU's sequential peel bit for bit. Each round is two kernels, so every read of the
// first sees the state the previous round left:
//   find:    cells with count 1 name their lone entry (XOR of ids); it is claimed by its lowest-h
//            cell with count 1 (no atomics needed to pick one), value = sign * cell.
//   subtract: each new entry leaves its cells (value, count, id), and cells whose count drops to 1
//            form the next round's frontier. A cell can only reach 1 in a subtract pass, so the
//            frontier holds every cell with count 1 (round 0 scans all cells).
#include "kernels/hlc/cuda/hlc_cuda.h"
#include "kernels/hlc/cuda/hlc_cuda_common.cuh"
#include "kernels/hlc/sketch.h"

namespace dynamix {
namespace hlc_cuda {
namespace {

__global__ void count_kernel(const uint32_t* cell, size_t entries, uint32_t* count, uint32_t* ids) {
  for (size_t k = global_thread(); k < entries; k += grid_threads()) {
    for (int h = 0; h < kHlcHashes; ++h) {
      const uint32_t c = cell[k * kHlcHashes + h];
      atomicAdd(&count[c], 1u);
      atomicXor(&ids[c], static_cast<uint32_t>(k));
    }
  }
}

// frontier == nullptr: every cell 0..n.
__global__ void find_kernel(const uint32_t* frontier, size_t n, const uint32_t* count, const uint32_t* ids,
                            const uint32_t* cell, const uint8_t* negative, const uint64_t* cells,
                            int64_t* sums, uint8_t* recovered, uint32_t* found, uint32_t* num_found) {
  for (size_t t = global_thread(); t < n; t += grid_threads()) {
    const uint32_t c = frontier ? frontier[t] : static_cast<uint32_t>(t);
    if (count[c] != 1) continue;
    const uint32_t k = ids[c];
    const uint32_t* kc = &cell[static_cast<size_t>(k) * kHlcHashes];
    int h_here = 0;
    while (h_here < kHlcHashes - 1 && kc[h_here] != c) ++h_here;  // bounded: never reads past k
    bool claimed_lower = false;  // another cell of k with count 1 and lower h recovers it
    for (int h = 0; h < h_here; ++h) claimed_lower |= count[kc[h]] == 1;
    if (claimed_lower) continue;
    const uint64_t value = ((negative[k] >> h_here) & 1) ? uint64_t{0} - cells[c] : cells[c];
    sums[k] = static_cast<int64_t>(value);
    recovered[k] = 1;
    found[atomicAdd(num_found, 1u)] = k;
  }
}

__global__ void subtract_kernel(const uint32_t* found, const uint32_t* num_found, size_t bound,
                                const uint32_t* cell, const uint8_t* negative, const int64_t* sums,
                                unsigned long long* cells, uint32_t* count, uint32_t* ids, uint32_t* next,
                                uint32_t* num_next) {
  const size_t n = min(static_cast<size_t>(*num_found), bound);
  for (size_t j = global_thread(); j < n; j += grid_threads()) {
    const uint32_t k = found[j];
    const uint32_t* kc = &cell[static_cast<size_t>(k) * kHlcHashes];
    const uint8_t neg = negative[k];
    const uint64_t value = static_cast<uint64_t>(sums[k]);
    for (int h = 0; h < kHlcHashes; ++h) {
      const uint32_t o = kc[h];
      const uint64_t added = ((neg >> h) & 1) ? uint64_t{0} - value : value;
      atomicAdd(&cells[o], uint64_t{0} - added);
      atomicXor(&ids[o], k);
      if (atomicSub(&count[o], 1u) == 2) next[atomicAdd(num_next, 1u)] = o;
    }
  }
}

__global__ void dequantize_kernel(const uint32_t* support, const int64_t* sums, size_t entries, int scale,
                                  float* data) {
  for (size_t k = global_thread(); k < entries; k += grid_threads()) {
    data[support[k]] = fixed_to_float(sums[k], scale);
  }
}

__global__ void place_kernel(const uint32_t* positions, const float* values, size_t n, float* data) {
  for (size_t j = global_thread(); j < n; j += grid_threads()) data[positions[j]] = values[j];
}

}  // namespace
}  // namespace hlc_cuda

using namespace hlc_cuda;

cudaError_t hlc_cuda_peel(const uint32_t* cell, const uint8_t* negative, size_t entries, size_t ncells,
                          int64_t* cells, int64_t* sums, uint8_t* recovered, size_t* done,
                          cudaStream_t stream) {
  *done = 0;
  if (entries > UINT32_MAX || ncells > UINT32_MAX) return cudaErrorInvalidValue;
  if (entries == 0) return cudaSuccess;
  HLC_CUDA_TRY(cudaMemsetAsync(recovered, 0, entries, stream));
  // count, ids, two frontiers (cells each), found list (entries), two counters.
  const size_t words = 4 * ncells + entries + 2;
  Scratch scratch(stream);
  HLC_CUDA_TRY(scratch.allocate(words * sizeof(uint32_t)));
  auto* count = static_cast<uint32_t*>(scratch.get());
  uint32_t* ids = count + ncells;
  uint32_t* frontier = ids + ncells;
  uint32_t* next = frontier + ncells;
  uint32_t* found = next + ncells;
  uint32_t* counters = found + entries;  // [found this round, next frontier size]
  HLC_CUDA_TRY(cudaMemsetAsync(count, 0, 2 * ncells * sizeof(uint32_t), stream));
  count_kernel<<<blocks_for(entries), kThreads, 0, stream>>>(cell, entries, count, ids);
  HLC_CUDA_LAUNCHED();

  auto* ucells = reinterpret_cast<unsigned long long*>(cells);
  size_t frontier_size = ncells;
  bool all_cells = true;
  while (frontier_size > 0) {
    HLC_CUDA_TRY(cudaMemsetAsync(counters, 0, 2 * sizeof(uint32_t), stream));
    find_kernel<<<blocks_for(frontier_size), kThreads, 0, stream>>>(
        all_cells ? nullptr : frontier, frontier_size, count, ids, cell, negative,
        reinterpret_cast<const uint64_t*>(cells), sums, recovered, found, &counters[0]);
    HLC_CUDA_LAUNCHED();
    // At most min(frontier, entries) entries were found; threads read the exact number.
    const size_t bound = std::min(frontier_size, entries);
    subtract_kernel<<<blocks_for(bound), kThreads, 0, stream>>>(found, &counters[0], bound, cell, negative,
                                                                sums, ucells, count, ids, next, &counters[1]);
    HLC_CUDA_LAUNCHED();
    uint32_t host_counters[2] = {0, 0};
    HLC_CUDA_TRY(
        cudaMemcpyAsync(host_counters, counters, sizeof(host_counters), cudaMemcpyDeviceToHost, stream));
    HLC_CUDA_TRY(cudaStreamSynchronize(stream));
    *done += host_counters[0];
    if (host_counters[0] == 0) break;
    frontier_size = host_counters[1];
    std::swap(frontier, next);
    all_cells = false;
  }
  return cudaSuccess;
}

cudaError_t hlc_cuda_dequantize(const uint32_t* support, const int64_t* sums, size_t entries, int scale,
                                const uint32_t* off_positions, const float* off_values, size_t n_off,
                                float* data, size_t count, cudaStream_t stream) {
  // +0.0f outside the union, as the CPU's fill.
  HLC_CUDA_TRY(cudaMemsetAsync(data, 0, count * sizeof(float), stream));
  if (entries > 0) {
    dequantize_kernel<<<blocks_for(entries), kThreads, 0, stream>>>(support, sums, entries, scale, data);
    HLC_CUDA_LAUNCHED();
  }
  if (n_off > 0) {  // after the grid entries: same stream, so off-grid sums win
    place_kernel<<<blocks_for(n_off), kThreads, 0, stream>>>(off_positions, off_values, n_off, data);
    HLC_CUDA_LAUNCHED();
  }
  return cudaSuccess;
}

}  // namespace dynamix
