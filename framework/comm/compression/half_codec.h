// DYNAMIX — fp16 / bf16 codecs: cast, SUM allreduce in the 16-bit type, cast back.
#pragma once

#include <cstdint>
#include <vector>

#include "framework/comm/compression/codec.h"

namespace dynamix {

// The SUM is the communicator's own over DType kFloat16 / kBFloat16 buffers (MPI: a user-defined
// op that widens each pairwise combine to float and rounds back; NCCL: natively), so the codec
// works over any Communicator, wrapped ones (the watchdog's) included. The last bits depend on the
// backend's reduction tree, as with any half allreduce; for 2 ranks the result is round16(a16 + b16).
class HalfCodec final : public GradientCodec {
 public:
  explicit HalfCodec(bool bf16) : bf16_(bf16) {}
  std::string name() const override { return bf16_ ? "bf16" : "fp16"; }
  void allreduce_sum(float* data, size_t count, Communicator& comm, CodecStats* stats) override;

 private:
  bool bf16_;
  std::vector<uint16_t> wire_;
};

}  // namespace dynamix
