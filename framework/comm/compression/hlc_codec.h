// DYNAMIX — hlc: lossless homomorphic compression of sparse gradients (arXiv:2402.07529).
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "framework/comm/compression/codec.h"

namespace dynamix {

// Rounds (each a collective on the Communicator):
//  1. head:   SUM of per-rank slots {non-zeros, max |finite value|}  -> early dense choice, scale.
//  2. union:  SUM of packed per-element non-zero counters            -> union support U.
//  3. sketch: SUM of int64 count-sketch cells (3 hashes per entry, cells per 1024-element block)
//             plus per-rank slots counting values that are off the fixed-point grid.
//  [4. allgather of off-grid positions, only if any]
//  [5. dense int64 SUM of the entries that did not peel, only if any]
//  [6. dense float SUM at off-grid positions, only if any]
// Exactness rule: every union entry whose values are all on the bucket's fixed-point grid (v*2^s
// an integer; s puts max|v| just under 2^62/(ranks*max cell load), so about 32 binary orders of
// magnitude below the bucket's largest value always qualify) ends as the correctly rounded float
// of the exact sum over ranks, peeled or not. Off-grid entries (tinier values, Inf, NaN) are summed
// by a dense float allreduce of those positions. With 2 ranks both equal a dense float32
// allreduce bit for bit; with more ranks the grid entries are at least as accurate as it.
//
// Device memory (built with the CUDA kernels, kernels/hlc/cuda/): a bucket in device memory runs
// the same rounds with the kernels on the legacy default stream, with the same collectives, counts,
// dtypes, choices, statistics and result bits as the host path. Collectives take the device buffers
// on the nccl backend, and go through a pinned host copy on the others. The call does not wait for
// its last copies and kernels: the result is ordered on the legacy default stream (synchronize it
// before reading the bucket on the host). On nccl every rank must pass the same kind of memory; on
// other backends device and host ranks may mix.
class HlcCodec final : public GradientCodec {
 public:
  explicit HlcCodec(const CodecOptions& options);
  std::string name() const override { return "hlc"; }
  void allreduce_sum(float* data, size_t count, Communicator& comm, CodecStats* stats) override;
  bool accepts_device_memory() const override;

 private:
  struct Device;  // device and pinned buffers of the device path (hlc_codec_cuda.cc)
  static void release(Device* device);

  // Byte model of the automatic choice, after round 1 and after round 2.
  bool dense_after_head(size_t count, int ranks, size_t max_nnz) const;
  bool dense_after_union(size_t count, int ranks, size_t ncells) const;
  void dense(float* data, size_t count, Communicator& comm, CodecStats* stats);
  // Off-grid positions of all ranks, sorted and unique (round 4).
  std::vector<uint32_t> gather_off_grid(const std::vector<uint32_t>& mine, const int64_t* counts,
                                        Communicator& comm, CodecStats* stats);

  // The device path (hlc_codec_cuda.cc): whether `data` is CUDA device (or managed) memory, and
  // allreduce_sum on it. Defined only when built with the kernels.
  static bool is_device_memory(const void* data, int* device);
  void allreduce_sum_device(float* data, size_t count, int device, Communicator& comm, CodecStats* stats);

  CodecOptions options_;
  std::vector<int64_t> words_;
  std::vector<int64_t> cells_;
  std::unique_ptr<Device, void (*)(Device*)> device_{nullptr, &HlcCodec::release};
};

// Helpers shared by the host and device paths of HlcCodec.
namespace hlc_detail {
int64_t float_slot(float f);
float slot_float(int64_t slot);
// Largest per-rank non-zero count and largest finite magnitude from the summed head slots.
void read_head(const int64_t* head, int ranks, size_t* max_nnz, float* max_abs);
// The allgathered, UINT32_MAX-padded position lists of all ranks -> sorted unique positions.
std::vector<uint32_t> merge_positions(std::vector<uint32_t> all);
}  // namespace hlc_detail

}  // namespace dynamix
