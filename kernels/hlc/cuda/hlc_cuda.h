// DYNAMIX — CUDA kernels of the hlc codec (arXiv:2402.07529). Each call mirrors one CPU step of
// HlcCodec::allreduce_sum (framework/comm/compression/hlc_codec.cc) on one bucket and gives the same
// bits as the CPU reference in kernels/hlc/. Raw device pointers, stream-ordered, no collectives:
// the caller runs the allreduces between the steps. Sizes and scalars are host values; variable-size
// outputs report their length in a device counter. Scratch memory comes from cudaMallocAsync.
//
// The sketch layout (kHlcHashes cells and the sign bits per support entry) is built on the host by
// build_layout() from the support, identically on every rank; its `cell` and `negative` arrays are
// copied verbatim to the device (the hash is not ported).
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

namespace dynamix {

// Round 1. head[0] = number of elements != 0 (NaN counts), head[1] = bit pattern of the largest
// finite |value| zero-extended to int64 (HlcCodec's float_slot); head is overwritten.
cudaError_t hlc_cuda_head(const float* data, size_t count, int64_t* head, cudaStream_t stream);

// Round 2. Writes union_words(count, ranks) words, bit-identical to pack_nonzero().
cudaError_t hlc_cuda_pack_nonzero(const float* data, size_t count, int ranks, int64_t* words,
                                  cudaStream_t stream);

// After round 2. Sorted positions whose summed counter is non-zero, as unpack_support(): `support`
// holds room for `count` entries, *num (device) receives their number. count must be < 2^32.
cudaError_t hlc_cuda_unpack_support(const int64_t* words, size_t count, int ranks, uint32_t* support,
                                    uint32_t* num, cudaStream_t stream);

// Round 3. For each support entry k with v = data[support[k]] (scale from fixed_scale(), agreed
// across ranks): fixed[k] = float_to_fixed(v, scale) or 0 where v == 0 or off grid; on-grid values
// are added into `cells` with the layout's cells and signs (64-bit wrap-around, order-free);
// off_grid[k] = 1 for non-zero off-grid values (else 0) and *off_grid_count (device, int64, e.g.
// the rank's slot after the cells) is incremented by their number. Zero `cells` and
// *off_grid_count first; `cell` holds kHlcHashes entries per support entry.
cudaError_t hlc_cuda_encode(const float* data, const uint32_t* support, size_t entries, const uint32_t* cell,
                            const uint8_t* negative, int scale, int64_t* cells, int64_t* fixed,
                            uint8_t* off_grid, int64_t* off_grid_count, cudaStream_t stream);

// After round 3. Parallel peeling of the summed `cells` (consumed, left as the CPU peel leaves
// them). recovered[k] = 1 and sums[k] = exact sum for each recovered entry, recovered[k] = 0
// otherwise (sums untouched there), as peel(). *done (host) = number recovered. Synchronizes the
// stream once per peeling round.
cudaError_t hlc_cuda_peel(const uint32_t* cell, const uint8_t* negative, size_t entries, size_t ncells,
                          int64_t* cells, int64_t* sums, uint8_t* recovered, size_t* done,
                          cudaStream_t stream);

// out[j] = k (or map[k] where map is non-null) for the k < n, in increasing order, whose
// flags[k] == match; *num (device) = their number. Off-grid positions: (off_grid, 1, support);
// fallback entries (round 5): (recovered, 0, nullptr).
cudaError_t hlc_cuda_select(const uint8_t* flags, uint8_t match, size_t n, const uint32_t* map, uint32_t* out,
                            uint32_t* num, cudaStream_t stream);

// recovered[k] = value for every k with support[k] in positions[0..n) (all must be in the
// support); the codec marks the gathered off-grid positions with 2.
cudaError_t hlc_cuda_mark_positions(const uint32_t* support, size_t entries, const uint32_t* positions,
                                    size_t n, uint8_t value, uint8_t* recovered, cudaStream_t stream);

// dst[j] = src[index[j]] and dst[index[j]] = src[j], j < n: the fallback values out of `fixed`
// (round 5) and their sums back into `sums`, the off-grid floats out of the bucket (round 6).
cudaError_t hlc_cuda_gather(const int64_t* src, const uint32_t* index, size_t n, int64_t* dst,
                            cudaStream_t stream);
cudaError_t hlc_cuda_gather(const float* src, const uint32_t* index, size_t n, float* dst,
                            cudaStream_t stream);
cudaError_t hlc_cuda_scatter(const int64_t* src, const uint32_t* index, size_t n, int64_t* dst,
                             cudaStream_t stream);

// Final scatter: data[0..count) = 0, data[support[k]] = fixed_to_float(sums[k], scale), then
// data[off_positions[j]] = off_values[j] (off-grid sums override their entries).
cudaError_t hlc_cuda_dequantize(const uint32_t* support, const int64_t* sums, size_t entries, int scale,
                                const uint32_t* off_positions, const float* off_values, size_t n_off,
                                float* data, size_t count, cudaStream_t stream);

}  // namespace dynamix
