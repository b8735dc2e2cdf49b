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

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string backend() const override { return "mpi"; }

  void allreduce_sum(void* buffer, size_t count, DType dtype) override;
  void allreduce_max(void* buffer, size_t count, DType dtype) override;
  void broadcast(void* buffer, size_t count, DType dtype, int root) override;
  void gather(const void* send, size_t bytes, void* recv, int root) override;
  void allgather(const void* send, size_t bytes, void* recv) override;
  void barrier() override;

  MPI_Comm comm() const { return comm_; }

 private:
  void allreduce(void* buffer, size_t count, DType dtype, MPI_Op op);

  MPI_Comm comm_;
  int rank_ = 0;
  int size_ = 1;
};

// MPI datatype for a DType; half types have no MPI equivalent for SUM and throw.
MPI_Datatype mpi_datatype(DType dtype);

}  // namespace dynamix
