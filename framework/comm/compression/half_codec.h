// DYNAMIX — fp16 / bf16 codecs: cast, SUM allreduce in the 16-bit type, cast back.
#pragma once

#include <mpi.h>

#include <vector>

#include "framework/comm/compression/codec.h"

namespace dynamix {

// On the MPI backend the SUM is a user-defined commutative MPI_Op over 16-bit payloads: every
// pairwise combine widens both operands to float, adds, and rounds the sum back to the 16-bit
// type (nearest even). So the last bits depend on MPI's reduction tree, as with any half allreduce
// (NCCL too); for 2 ranks the result is round16(a16 + b16). Other backends get DType kFloat16 /
// kBFloat16 buffers and must sum them natively (NCCL does).
class HalfCodec final : public GradientCodec {
 public:
  explicit HalfCodec(bool bf16) : bf16_(bf16) {}
  ~HalfCodec() override;
  std::string name() const override { return bf16_ ? "bf16" : "fp16"; }
  void allreduce_sum(float* data, size_t count, Communicator& comm, CodecStats* stats) override;

 private:
  bool bf16_;
  MPI_Op op_ = MPI_OP_NULL;
  std::vector<uint16_t> wire_;
};

}  // namespace dynamix
