// DYNAMIX — fp16 / bf16 allreduce codecs.
#include "framework/comm/compression/half_codec.h"

#include <algorithm>
#include <climits>

#include "framework/comm/mpi_communicator.h"
#include "framework/core/error.h"
#include "kernels/hlc/half.h"

namespace dynamix {
namespace {

void sum_fp16(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = float_to_fp16(fp16_to_float(a[i]) + fp16_to_float(b[i]));
}

void sum_bf16(void* in, void* inout, int* len, MPI_Datatype*) {
  const auto* a = static_cast<const uint16_t*>(in);
  auto* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = float_to_bf16(bf16_to_float(a[i]) + bf16_to_float(b[i]));
}

constexpr size_t kMaxChunk = static_cast<size_t>(INT_MAX) / 4;

}  // namespace

HalfCodec::~HalfCodec() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (op_ != MPI_OP_NULL && !finalized) MPI_Op_free(&op_);
}

void HalfCodec::allreduce_sum(float* data, size_t count, Communicator& comm, CodecStats* stats) {
  wire_.resize(count);
  if (bf16_) {
    floats_to_bf16(data, count, wire_.data());
  } else {
    floats_to_fp16(data, count, wire_.data());
  }
  int rounds = 0;
  if (auto* mpi = dynamic_cast<MpiCommunicator*>(&comm)) {
    if (op_ == MPI_OP_NULL) DYNAMIX_MPI_CHECK(MPI_Op_create(bf16_ ? sum_bf16 : sum_fp16, 1, &op_));
    for (size_t done = 0; done < count; ++rounds) {
      const size_t n = std::min(kMaxChunk, count - done);
      DYNAMIX_MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, wire_.data() + done, static_cast<int>(n), MPI_UINT16_T,
                                      op_, mpi->comm()));
      done += n;
    }
  } else {
    comm.allreduce_sum(wire_.data(), count, bf16_ ? DType::kBFloat16 : DType::kFloat16);
    rounds = 1;
  }
  if (bf16_) {
    bf16s_to_float(wire_.data(), count, data);
  } else {
    fp16s_to_float(wire_.data(), count, data);
  }
  if (stats) {
    *stats = CodecStats{};
    stats->path = name();
    stats->count = count;
    stats->union_count = count;
    stats->union_density = 1.0;
    stats->bytes_sent = 2 * count;
    stats->dense_bytes = 4 * count;
    stats->rounds = rounds;
  }
}

}  // namespace dynamix
