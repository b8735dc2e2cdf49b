// DYNAMIX — Communicator over MPI (host buffers). The CPU backend, and the fallback on GPUs
// that several ranks share (NCCL refuses two ranks on one device).
#pragma once

#include <mpi.h>

#include "framework/comm/communicator.h"

namespace dynamix {

class MpiCommunicator final : public Communicator {
 public:
  // Uses (does not own) `comm`; MPI must be initialized.
  explicit MpiCommunicator(MPI_Comm comm = MPI_COMM_WORLD);
  // Frees the 16-bit reduction ops (unless MPI is already finalized).
  ~MpiCommunicator() override;
  MpiCommunicator(const MpiCommunicator&) = delete;
  MpiCommunicator& operator=(const MpiCommunicator&) = delete;

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }

  // float16 / bfloat16: user-defined commutative MPI_Ops over 16-bit payloads; every pairwise
  // combine widens both operands to float, applies the op, and rounds back (nearest even). So the
  // last bits of a sum depend on MPI's reduction tree, as with any half allreduce (NCCL too); for
  // 2 ranks the sum is round16(a16 + b16).
  void allreduce_sum(void* buffer, size_t count, DType dtype) override;
  void allreduce_max(void* buffer, size_t count, DType dtype) override;
  void broadcast(void* buffer, size_t count, DType dtype, int root) override;
  void gather(const void* send, size_t bytes, void* recv, int root) override;
  void allgather(const void* send, size_t bytes, void* recv) override;
  void barrier() override;

  MPI_Comm comm() const { return comm_; }

 private:
  void allreduce(void* buffer, size_t count, DType dtype, MPI_Op op);
  // The MPI_Op for `dtype` (a 16-bit float type) and `max` (else sum).
  MPI_Op half_op(DType dtype, bool max) const;

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
  // [bf16][max]: created in the constructor (MPI_Op_create is local), read-only afterwards, so
  // collectives from the overlap's comm thread need no lock.
  MPI_Op half_ops_[2][2] = {{MPI_OP_NULL, MPI_OP_NULL}, {MPI_OP_NULL, MPI_OP_NULL}};
};

// MPI datatype for a DType's arithmetic (float16 / bfloat16: MPI_UINT16_T, reduced only with
// MpiCommunicator's own ops, never MPI's predefined ones).
MPI_Datatype mpi_datatype(DType dtype);

}  // namespace dynamix
