// DYNAMIX — hlc: lossless homomorphic compression of sparse gradients (arXiv:2402.07529).
#pragma once

#include <cstdint>
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
class HlcCodec final : public GradientCodec {
 public:
  explicit HlcCodec(const CodecOptions& options);
  std::string name() const override { return "hlc"; }
  void allreduce_sum(float* data, size_t count, Communicator& comm, CodecStats* stats) override;

 private:
  void dense(float* data, size_t count, Communicator& comm, CodecStats* stats);
  // Off-grid positions of all ranks, sorted and unique (round 4).
  std::vector<uint32_t> gather_off_grid(const std::vector<uint32_t>& mine, const int64_t* counts,
                                        Communicator& comm, CodecStats* stats);

  CodecOptions options_;
  std::vector<int64_t> words_;
  std::vector<int64_t> cells_;
};

}  // namespace dynamix
