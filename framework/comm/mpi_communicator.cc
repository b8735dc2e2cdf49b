// DYNAMIX — MPI communicator.
#include "framework/comm/mpi_communicator.h"

#include <algorithm>
#include <climits>
#include <cstdint>

#include "framework/comm/mpi_check.h"
#include "framework/core/error.h"
#include "kernels/hlc/half.h"

namespace dynamix {
namespace {

// MPI counts are int: split larger buffers into chunks the API can address.
constexpr size_t kMaxChunk = static_cast<size_t>(INT_MAX) / 8;

// 16-bit float reductions: widen both operands, combine in float, round back (nearest even).
template <float (*Widen)(uint16_t), uint16_t (*Narrow)(float), bool Max>
void half_reduce(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) {
    const float x = Widen(a[i]), y = Widen(b[i]);
    b[i] = Narrow(Max ? std::max(x, y) : x + y);
  }
}

}  // namespace

MPI_Datatype mpi_datatype(DType dtype) {
  switch (dtype) {
    case DType::kFloat32:
      return MPI_FLOAT;
    case DType::kFloat64:
      return MPI_DOUBLE;
    case DType::kInt32:
      return MPI_INT32_T;
    case DType::kInt64:
      return MPI_INT64_T;
    case DType::kUInt8:
      return MPI_UINT8_T;
    case DType::kFloat16:
    case DType::kBFloat16:
      return MPI_UINT16_T;
  }
  throw Error("MPI backend: unknown dtype");
}

MpiCommunicator::MpiCommunicator(MPI_Comm comm) : comm_(comm) {
  DYNAMIX_MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  DYNAMIX_MPI_CHECK(MPI_Comm_size(comm_, &size_));
  DYNAMIX_MPI_CHECK(MPI_Op_create(half_reduce<fp16_to_float, float_to_fp16, false>, 1, &half_ops_[0][0]));
  DYNAMIX_MPI_CHECK(MPI_Op_create(half_reduce<fp16_to_float, float_to_fp16, true>, 1, &half_ops_[0][1]));
  DYNAMIX_MPI_CHECK(MPI_Op_create(half_reduce<bf16_to_float, float_to_bf16, false>, 1, &half_ops_[1][0]));
  DYNAMIX_MPI_CHECK(MPI_Op_create(half_reduce<bf16_to_float, float_to_bf16, true>, 1, &half_ops_[1][1]));
}

MpiCommunicator::~MpiCommunicator() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  for (auto& row : half_ops_) {
    for (MPI_Op& op : row) {
      if (op != MPI_OP_NULL) MPI_Op_free(&op);
    }
  }
}

MPI_Op MpiCommunicator::half_op(DType dtype, bool max) const {
  return half_ops_[dtype == DType::kBFloat16 ? 1 : 0][max ? 1 : 0];
}

void MpiCommunicator::allreduce(void* buffer, size_t count, DType dtype, MPI_Op op) {
  MPI_Datatype type = mpi_datatype(dtype);
  if (dtype == DType::kFloat16 || dtype == DType::kBFloat16) op = half_op(dtype, op == MPI_MAX);
  auto* bytes = static_cast<char*>(buffer);
  const size_t elem = dtype_size(dtype);
  for (size_t done = 0; done < count;) {
    const size_t n = std::min(kMaxChunk, count - done);
    DYNAMIX_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, bytes + done * elem, static_cast<int>(n), type, op, comm_));
    done += n;
  }
}

void MpiCommunicator::allreduce_sum(void* buffer, size_t count, DType dtype) {
  allreduce(buffer, count, dtype, MPI_SUM);
}

void MpiCommunicator::allreduce_max(void* buffer, size_t count, DType dtype) {
  allreduce(buffer, count, dtype, MPI_MAX);
}

void MpiCommunicator::broadcast(void* buffer, size_t count, DType dtype, int root) {
  // Broadcast moves bytes, so half types are fine here.
  auto* bytes = static_cast<char*>(buffer);
  size_t total = count * dtype_size(dtype);
  for (size_t done = 0; done < total;) {
    const size_t n = std::min(kMaxChunk, total - done);
    DYNAMIX_MPI_CHECK(MPI_Bcast(bytes + done, static_cast<int>(n), MPI_BYTE, root, comm_));
    done += n;
  }
}

void MpiCommunicator::gather(const void* send, size_t bytes, void* recv, int root) {
  DYNAMIX_CHECK(bytes <= kMaxChunk, "gather of " + std::to_string(bytes) + " bytes per rank is too large");
  DYNAMIX_MPI_CHECK(MPI_Gather(send, static_cast<int>(bytes), MPI_BYTE, recv, static_cast<int>(bytes),
                               MPI_BYTE, root, comm_));
}

void MpiCommunicator::allgather(const void* send, size_t bytes, void* recv) {
  DYNAMIX_CHECK(bytes <= kMaxChunk, "allgather of " + std::to_string(bytes) + " bytes per rank is too large");
  DYNAMIX_MPI_CHECK(
      MPI_Allgather(send, static_cast<int>(bytes), MPI_BYTE, recv, static_cast<int>(bytes), MPI_BYTE, comm_));
}

void MpiCommunicator::barrier() { DYNAMIX_MPI_CHECK(MPI_Barrier(comm_)); }

}  // namespace dynamix
